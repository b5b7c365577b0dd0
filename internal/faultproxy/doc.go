// Package faultproxy is a reverse proxy for an S3 (or any HTTP) server that
// injects the transient faults a real store and network produce, at a rate
// per fault, and counts each one it injected:
//
//	503          answer 503 SlowDown without forwarding
//	429          answer 429 TooManyRequests without forwarding
//	reset-before reset the connection (TCP RST) without forwarding
//	reset-after  forward, let the server apply the request, then reset the
//	             connection instead of answering: a lost acknowledgement
//	stall        hold the connection open without answering (until the
//	             client gives up, or Config.StallFor)
//	cut          forward a GET, send the status, headers and half of the
//	             body, then close the connection
//	delay        wait Config.Delay, then forward
//
// One uniform draw per request picks at most one fault, so the rates are
// exclusive and must sum to at most 1; "cut" applies only to GET responses
// with a body (status 200 or 206 and a Content-Length of at least 2), so
// its rate is a rate of such GETs. The draws come from Config.Seed, so a
// run with one client at a time injects the same faults again.
//
// The Host header is passed through unchanged, because S3 clients sign it.
// Tests put it in front of gofakes3 (see internal/silttest); .ci/run puts
// it, through cmd/faultproxy, in front of versitygw.
package faultproxy
