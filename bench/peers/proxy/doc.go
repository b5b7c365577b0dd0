// Package proxy is a reverse proxy for an S3 server that counts requests
// per S3 operation and adds a fixed delay to each one, so that tools which
// cannot report their own requests (rclone, the AWS CLI) are measured the
// same way as silt, and a server on 127.0.0.1 behaves like a distant one.
//
// # Counting
//
// Every request is classified by [Classify] from its method, path and
// query (path-style addressing: /bucket/key) before it is forwarded; the
// count includes requests the server then rejects, which are also counted
// apart as errors (status 400 and above). [Proxy.Snapshot] reads the
// counts, [Proxy.Reset] starts over.
//
// # Latency
//
// The delay is waited before the request is forwarded, once per request,
// and ends early when the client goes away. [Proxy.SetDelay] changes it
// between measurements (for instance 0 while a tree is prepared).
//
// The Host header is passed through unchanged, because S3 clients sign it.
package proxy
