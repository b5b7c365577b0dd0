// Package mem is an in-memory backend: the reference implementation of the
// backend contract, for tests and examples.
//
// # URLs
//
// "mem://name" opens the in-process bucket called name, creating it empty
// on first use; every Open of the same name in one process shares it. A
// path after the name is a key prefix. Buckets live until the process ends.
package mem
