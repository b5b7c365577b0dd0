// Package stores is the one list of the stores silt ships. Importing it
// (blank) registers every shipped URL scheme with backend.Open; a command
// that opens stores by URL imports this package rather than the drivers
// one by one, so adding a driver here adds it everywhere at once.
//
//	file://           a directory (backend/fs)
//	mem://            in-process memory, per process (backend/mem)
//	s3://             Amazon S3 and S3-compatible stores (backend/s3)
//	gs://             Google Cloud Storage (backend/gcs)
//	blob+mem://       the linked gocloud.dev drivers (backend/blob):
//	blob+azblob://    memblob and Azure Blob
package stores

import (
	_ "github.com/siltsync/silt/backend/blob" // blob+mem://, blob+azblob://
	_ "github.com/siltsync/silt/backend/fs"   // file://
	_ "github.com/siltsync/silt/backend/gcs"  // gs://
	_ "github.com/siltsync/silt/backend/mem"  // mem://
	_ "github.com/siltsync/silt/backend/s3"   // s3://
)

// Schemes are the URL schemes the shipped stores register, sorted as
// backend.Schemes sorts them.
var Schemes = []string{"blob+azblob", "blob+mem", "file", "gs", "mem", "s3"}
