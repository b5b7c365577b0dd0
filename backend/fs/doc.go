// Package fs is a local directory used as a bucket: each object is a plain
// file, so the bucket can be browsed, copied and backed up with ordinary
// tools. Writes are atomic and every condition of the backend contract is
// honoured across processes on one machine.
//
// # URLs
//
// "file:///abs/dir" (or "file://localhost/abs/dir") opens the directory
// /abs/dir; "file://./rel/dir" opens a directory relative to the working
// directory. The whole path names the directory; there is no key prefix.
// The one query parameter is create: create=true (the default) creates the
// directory and its parents when missing, create=false makes a missing
// directory an error. Any other parameter is rejected.
//
// # Layout
//
// The object with key "a/b/c" is the file {root}/a/b/c. Directories are
// created as writes need them and removed by Delete once empty, so the
// tree holds no directory an object store would not show. The directory
// {root}/.silt-fs belongs to this package: .silt-fs/tmp holds writes in
// progress and .silt-fs/locks holds 256 lock files, one per shard of the
// key space (the first byte of the key's SHA-256). Keys whose first segment
// is ".silt-fs" are invalid, and List never reports anything below it.
// A crashed writer can leave a file in .silt-fs/tmp; it is invisible to
// List. A Put holds an flock on its temp file until the file is published
// or removed, and the kernel drops it when the writer dies, so New and,
// at most once a minute, Put remove every temp file whose lock is free.
//
// A directory cannot hold both a file "a" and a file "a/b", which an
// object store can: such a Put fails with a permanent error naming the
// file/directory conflict. Stat and Get of a key that is a directory
// holding other keys report [backend.ErrNotExist] (it is their prefix, as
// in an object store); a key that is a FIFO, a device or an empty
// directory is [ErrNotRegular] (a socket fails to open): never absent.
//
// # Versions
//
// A version is the lowercase hex SHA-256 of the object's bytes (64
// characters), so a file copied into the tree by hand has a version like
// any other. Get hashes the open descriptor and then returns that same
// descriptor, so the version describes exactly the bytes read. Stat and
// List hash too; hashes are cached in memory by device, inode, size and
// timestamps, but only for files changed more than two seconds earlier,
// because a reused inode can repeat the rest of a fresh file's stamp.
// GetOptions.IfMatch and IfNoneMatch are compared with the hash of the
// open descriptor: a Get whose IfNoneMatch names the current hash closes
// the file and fails with [backend.ErrNotModified] (the 304 of an HTTP
// store), never retryable. GetOptions.Range reads a section of that same
// descriptor in place (ReadAt), never the whole file; the version still
// costs the hash, usually cached.
//
// Content versions have the ABA property: an object rewritten from A to B
// and back to A has A's version again, so a compare-and-swap holding A's
// version succeeds. Callers that must see every intermediate write need a
// counter inside the object. Writing identical bytes also keeps the
// version unchanged.
//
// # Atomicity
//
// Put writes the body to a temp file in .silt-fs/tmp (same file system as
// the objects), syncs it, and renames it into place, then syncs the parent
// directory; a reader sees the old object or the new one, never a mix, and
// a cancelled Put leaves no temp file behind. Cond{IfAbsent} links the
// temp file to the key with link(2), which fails if the name exists.
// Cond{IfMatch} and conditional Delete take an exclusive flock(2) on the
// key's shard lock file, hash the current file, compare, and rename or
// unlink. Every write of a key, conditional or not, holds the same lock,
// so no writer can slip in between another's check and its rename.
//
// These guarantees hold between processes using this package. Files
// rewritten in place or renamed into the tree by other tools bypass the
// locks; a tool that rewrites a file in place can also make a reader see a
// mix of old and new bytes. On network file systems flock and link need
// server support (NFS needs the lock mount option). The package builds on
// Unix systems only, and assumes a case-sensitive file system: on a
// case-insensitive one "A" and "a" are one object.
package fs
