// Package bench measures what silt's sync operations cost: requests per verb
// and wall time, for a small set of named scenarios modelled on the
// reference benchmark of the host silt was built for (its contract's
// sections 5.4 and 5.8; that document is not part of this repository).
//
// # Scenarios
//
// Every scenario builds its own fresh bucket, either the in-memory store
// ("mem") or a local directory ("fs"), seeds it, and then measures one
// operation over and over. Seeding and per-trial preparation go to the
// bucket directly; only the measured operation goes through
// [wrap.Latency], which adds a fixed delay to each request, so a 100k-entry
// namespace seeds in seconds while the measurement still shows what round
// trips cost.
//
// The scaled scenarios seed a namespace of N entries (models under
// data/aws/ec2/vpc/mNNNNN/, each with ten versions and a latest marker, as
// hosts lay them out) and touch one model in it. Their request counts must
// not depend on N: that is the claim the scale tier checks. The fixed
// scenarios (cold pull and cold push of 1,000 files of 5 KiB) mirror the
// reference benchmark's numbers one for one.
//
// # Results
//
// A [Result] holds the requests per verb the syncer reported
// ([syncer.Stats].Counts, which are exact and do not depend on the machine),
// the same requests as seen by an independent counter outside the syncer,
// and wall time and per-phase time as min/avg/max over the trials. [WriteTable]
// prints results for people, [WriteJSON] in the reference benchmark's JSON
// shape so the two can be compared side by side.
//
// The command bench/cmd/silt-bench runs the scenarios from the command line;
// bench_test.go holds Go benchmarks and a fast test of the request counts.
package bench
