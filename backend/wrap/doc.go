// Package wrap holds backends that wrap another backend. Each one is a
// [backend.Backend] itself, implements Unwrap, and changes only the verbs it
// is about, so wrappers compose in any order and [backend.Base] finds the
// store underneath.
//
// # Wrappers
//
//   - [Count] counts requests and body bytes per verb. The syncer wraps it
//     around its backend for one operation to report what the operation
//     cost; tests use its log to assert which keys were touched.
//   - [Latency] delays every request, so benchmarks against the in-memory
//     store show the cost of round trips (10 ms each, say) rather than of
//     CPU.
//   - [Faults] fails chosen requests in named ways (before sending, after
//     sending with the acknowledgement lost, holding the request until its
//     deadline, or by breaking, cutting, stalling or damaging a body) so
//     crash tests can say "fail the third conditional Put under .silt/"
//     instead of writing a mock. The same faults over real HTTP come from
//     the reverse proxy in internal/faultproxy.
//
// # Order
//
// The layers every production store gets (Retry, Timeout and the portable
// checks) live in package backend, because [backend.Open] composes them
// and this package imports backend; [backend.Production] is the one place
// their order is written. Counting is per operation and sits outside that
// stack, so counts are of requests the syncer asked for, not of resends.
//
// Latency and Faults are for tests and benchmarks only. They go under the
// production stack, so that what they inject looks to Retry like the
// network misbehaving:
//
//	f := wrap.Faults(wrap.Latency(mem.New(), wrap.LatencyConfig{Delay: 10 * time.Millisecond}))
//	b := backend.Production(f)
//
// Put a [Counting] directly over the store instead when a test needs the
// requests that actually reached it, resends included.
package wrap
