// Package serve is silt's local service: a process that owns one cache
// directory (it opens the syncer.Syncer once) and serves its operations to
// other processes and languages as JSON over a Unix socket, and optionally
// over 127.0.0.1 with a bearer token. API.md in this directory is the
// reference of the versioned API.
//
// # Server
//
// Open opens the cache; Listen creates the socket at SocketPath(dir);
// Server.Serve answers on a listener; Server.Shutdown stops accepting,
// lets operations finish until its context ends, cancels the rest, releases
// client locks and closes the Syncer. One request is one operation with its
// scope, and the server adds no lock of its own, so requests run as
// concurrently as the Syncer allows. Any operation can run as a job
// ("async": true), with progress, its result or error, and cancel.
//
// # One interface to a cache
//
// Cache is the Syncer's method set; *syncer.Syncer and *Client satisfy it.
// OpenCache returns the cache through the service of the process that owns
// the directory, or opens it in this process and (with OpenOptions.Serve)
// serves it until Close, so every process that owns a cache answers for it
// while it runs. New serves a Syncer the caller opened. The wire carries the
// engine's own option and Stats types, and a call's syncer.Observer (its
// per-file changes and progress) is streamed back, so a caller cannot tell
// the two ways apart.
//
// # Client
//
// Dial finds the service owning a directory (or returns ErrNotServed; a
// socket of another user is ErrForeignSocket);
// Client has one method per endpoint. Errors are *Error values carrying a
// stable code, and they match the library's sentinels with errors.Is, so a
// caller classifies them exactly as it would the library's own.
package serve
