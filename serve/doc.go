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
// # Client
//
// Dial finds the service owning a directory (or returns ErrNotServed);
// Client has one method per endpoint. Errors are *Error values carrying a
// stable code, and they match the library's sentinels with errors.Is, so a
// caller classifies them exactly as it would the library's own.
package serve
