// Package peers measures silt side by side with rclone and the AWS CLI
// (aws s3 sync) on a real S3 server: versitygw on 127.0.0.1, behind a
// reverse proxy (package proxy) that counts requests per S3 operation and
// adds a fixed delay to each, so all three tools are counted the same way
// and pay the same round trips.
//
// # Method
//
// [Run] starts versitygw (building it when needed) and the proxy, builds
// the silt CLI, and looks rclone and aws up on PATH; a missing tool is
// named in [Report.Missing] and its rows are left out. For each namespace
// size it generates a tree ([NewTree]: models of 2-, 3- and 4-segment
// types in the host layout, 5 KiB files, the same bytes every time) and
// gives every tool its own copies of it and its own bucket. Then, row by
// row, run by run, the tools take turns (the first one rotates each run):
// a row's preparation is never delayed nor counted, its operation is one
// child process measured for wall time, client CPU (user+sys) and peak
// RSS from its rusage, and requests as the proxy saw them. silt runs with
// --json, and its own request counts are compared with the proxy's.
//
// Every tool runs with its best settings for small files: rclone sync
// with --fast-list --transfers 16 --checkers 16, --s3-no-head on uploads
// and --checksum on re-syncs; aws s3 sync as shipped (path-style
// addressing, --only-show-errors). Their environments hold no AWS_* or
// RCLONE_* variable but the ones the runner sets (rclone refuses to start
// with AWS_CA_BUNDLE set).
//
// # Rows
//
// [Rows] lists them: no-op pull, no-op push (a walk), one changed file
// pushed, pull after a peer changed one file (checked: a pull that did not
// bring the change is marked), every modification time touched and
// pushed, one model pulled cold and then unchanged, cold download and cold
// upload of the whole tree. Above [Config.FullRowsUpTo] only the no-op
// push runs.
//
// # Results
//
// A [Report] holds every [Sample] and, per size and row, a [Cell] per
// tool: median, min and max over the runs, requests per operation, and
// the ratio to silt. [Report.WriteJSON], [Report.WriteMarkdown] and
// [Report.WritePlot] (SVG, no dependency) write it; the command
// bench/peers/cmd/silt-peers does all three. BENCHMARKS.md at the
// repository root holds the last full run.
package peers
