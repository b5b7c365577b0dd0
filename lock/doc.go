// Package lock is a distributed lock kept in one object of any
// [backend.Backend]. The key is the caller's: a global lock, one per
// model, one per namespace.
//
// There are three types: a [Lock] names the lock object and its options; a
// [Lease] is one acquisition, with a fencing token, a heartbeat and a Lost
// channel; an [Info] describes a holder, as [Lock.Inspect] reports it.
// [WithLock] wraps acquire, run, release.
//
// # The lock object
//
// The object is JSON: {format: 1, holder, hostname, pid, acquiredAt,
// heartbeatAt, beat, ttlMs, nonce, token, released}. The nonce is 128
// random bits naming one acquisition; the token is its fencing token.
// Every change is a conditional write on the version last read or
// written, never a blind put or delete:
//
//   - acquiring an absent key creates the object with IfAbsent, token 1;
//   - acquiring a released or stale lock writes token N+1 with IfMatch on
//     the version observed;
//   - a heartbeat, every TTL/3, rewrites the body (same nonce and token, a
//     new beat count) with IfMatch on the version this holder last wrote;
//   - release writes {released: true, token: N} with IfMatch, and so does
//     ForceRelease, which acts only if the nonce given is the holder's.
//
// The object is never deleted, so the token survives release and grows
// by one per acquisition: the syncer records Lease.Token in its commits to
// fence out a paused ex-holder. Deleting the object by hand restarts the
// sequence at 1; don't.
//
// # Staleness without clocks
//
// A waiter never compares its clock with the holder's or the store's. It
// remembers the version of the lock object it sees and when, by its own
// monotonic clock, it first saw it. If that version is still current a
// holder's TTL later, the holder has missed about three heartbeats and
// the waiter takes over with IfMatch on that exact version; a heartbeat
// landing first changes the version, so the takeover fails and the
// waiter's timer restarts. Exactly one of a heartbeat and a takeover
// racing on one version wins, and the loser learns it from
// ErrPrecondition. Skew between machines' wall clocks (hours, or a clock
// stepped mid-run) cannot make a live lock look stale or a dead one look
// fresh; only the rate of the clocks matters. The cost: a waiter that
// arrives at a long-dead lock still waits one TTL, since it cannot know
// how long the object had been silent before it looked.
//
// The holder keeps the mirror image of that rule: a heartbeat that has
// not succeeded by TTL after the last successful one was sent means a
// waiter may have taken over, so the lease is declared lost then, even if
// the request is still hanging. Transient errors are retried until that
// deadline; a takeover, a force release or a permanent error end the
// lease at once. Loss closes [Lease.Lost] and cancels [Lease.Context] with
// cause [ErrLost]. Release after a loss does nothing to the new holder.
//
// # Unknown outcomes
//
// A conditional write whose reply is lost may or may not have landed. The
// lock settles it by reading, never by replaying: a record carrying this
// acquisition's nonce can only have been written by it. So Acquire adopts
// its own earlier claim (with the same token, by a fresh CAS), a
// heartbeat that finds the version moved re-reads and continues if the
// nonce is still its own, and Release finishes on whatever version of its
// own record it finds.
//
// # Backends without compare-and-swap
//
// A backend with AtomicCreate but not ConditionalPut (a gocloud blob
// bucket, say) gets a weaker protocol: acquire creates with IfAbsent;
// release and ForceRelease read, check the nonce, then delete (IfMatch
// when the backend has ConditionalDelete); a heartbeat reads, checks the
// nonce, then puts unconditionally; a takeover deletes the stale object
// and creates with IfAbsent. Tokens come from a counter object at
// key+".fence", read and rewritten after the lock is created, and the lock
// record shows token 0 until then.
//
// Each check-then-write leaves a window of one round trip. A heartbeat
// racing a takeover can overwrite the new holder, so both believe they
// hold the lock until the new holder's next heartbeat finds the old
// nonce and declares its lease lost. Two waiters taking over one stale
// lock can likewise both succeed, the second deleting the first's fresh
// lock, unless the backend has ConditionalDelete. A holder paused between
// reading and writing the counter and then taken over can hand out a
// token twice. Tokens are therefore best effort there: unique and
// increasing in the absence of such pauses, not guaranteed. A backend
// with neither capability is refused with [backend.ErrNotSupported].
//
// # Design notes
//
//   - The record has heartbeatAt and a beat counter. The counter makes
//     every heartbeat change the bytes: the fs backend's versions are
//     content hashes, and a heartbeat with an unchanged body would keep
//     its version, which a waiter would read as silence. Since tokens and
//     beats only grow, no record's bytes recur, so content versions
//     cannot suffer ABA either.
//   - The heartbeat runs each request in its own goroutine and watches the
//     deadline itself (see above), so a hung request cannot keep a lease
//     that waiters may already take.
//   - [WithLock] returns an error matching [ErrLost] when the lease was lost
//     before fn returned, even if fn succeeded: fn's work was not
//     exclusive, and only the caller can tell whether fencing saved it.
//   - [TimeoutError] also carries the last transient error, so a wait that
//     timed out on a failing store does not read as contention.
//   - A negative Options.MaxWait makes Acquire try once.
//   - [Clock] has NewTimer (with Stop) rather than After, so a fake clock in
//     tests can tell which timers are pending and advance exactly past one.
package lock
