package main

// The stores this command ships: each blank import registers its URL
// scheme with backend.Open. This is the one place that lists them.
import (
	_ "github.com/siltsync/silt/backend/blob" // blob+mem://, blob+file://, blob+s3://, blob+gs://, blob+azblob://
	_ "github.com/siltsync/silt/backend/fs"   // file://
	_ "github.com/siltsync/silt/backend/gcs"  // gs://
	_ "github.com/siltsync/silt/backend/mem"  // mem:// (per process: for trying things out)
	_ "github.com/siltsync/silt/backend/s3"   // s3://
)
