package proxy

import (
	"net/http"
	"net/url"
	"strings"
)

// S3 operation names Classify returns, as the S3 API reference spells them.
const (
	OpListBuckets             = "ListBuckets"
	OpCreateBucket            = "CreateBucket"
	OpDeleteBucket            = "DeleteBucket"
	OpHeadBucket              = "HeadBucket"
	OpGetBucketLocation       = "GetBucketLocation"
	OpGetBucketSubresource    = "GetBucketSubresource"
	OpListObjects             = "ListObjects"
	OpListObjectsV2           = "ListObjectsV2"
	OpListObjectVersions      = "ListObjectVersions"
	OpListMultipartUploads    = "ListMultipartUploads"
	OpDeleteObjects           = "DeleteObjects"
	OpGetObject               = "GetObject"
	OpHeadObject              = "HeadObject"
	OpPutObject               = "PutObject"
	OpCopyObject              = "CopyObject"
	OpDeleteObject            = "DeleteObject"
	OpCreateMultipartUpload   = "CreateMultipartUpload"
	OpUploadPart              = "UploadPart"
	OpUploadPartCopy          = "UploadPartCopy"
	OpCompleteMultipartUpload = "CompleteMultipartUpload"
	OpAbortMultipartUpload    = "AbortMultipartUpload"
	OpListParts               = "ListParts"
	OpObjectSubresource       = "ObjectSubresource"
	OpOther                   = "Other"
)

// objectSubresources are query keys that turn an object request into a
// request on one of its sub-resources (tags, ACL, ...), which is not a
// data transfer and must not be counted as one.
var objectSubresources = []string{"tagging", "acl", "retention", "legal-hold", "attributes", "restore", "torrent"}

// Classify names the S3 operation of a path-style request (/bucket/key)
// from its method, path and query, as the proxy counts it. Requests it
// cannot place are OpOther, so a surprise shows up in the counts rather
// than being folded into a real operation.
func Classify(method string, u *url.URL, header http.Header) string {
	path := strings.TrimPrefix(u.EscapedPath(), "/")
	if path == "" {
		if method == http.MethodGet {
			return OpListBuckets
		}
		return OpOther
	}
	_, key, _ := strings.Cut(path, "/")
	q := u.Query()
	if key == "" {
		return bucketOp(method, q)
	}
	for _, s := range objectSubresources {
		if q.Has(s) {
			return OpObjectSubresource
		}
	}
	copySource := header.Get("X-Amz-Copy-Source") != ""
	switch method {
	case http.MethodGet:
		if q.Has("uploadId") {
			return OpListParts
		}
		return OpGetObject
	case http.MethodHead:
		return OpHeadObject
	case http.MethodPut:
		switch {
		case q.Has("partNumber") && q.Has("uploadId") && copySource:
			return OpUploadPartCopy
		case q.Has("partNumber") && q.Has("uploadId"):
			return OpUploadPart
		case copySource:
			return OpCopyObject
		}
		return OpPutObject
	case http.MethodPost:
		switch {
		case q.Has("uploads"):
			return OpCreateMultipartUpload
		case q.Has("uploadId"):
			return OpCompleteMultipartUpload
		}
	case http.MethodDelete:
		if q.Has("uploadId") {
			return OpAbortMultipartUpload
		}
		return OpDeleteObject
	}
	return OpOther
}

func bucketOp(method string, q url.Values) string {
	switch method {
	case http.MethodGet:
		switch {
		case q.Get("list-type") == "2":
			return OpListObjectsV2
		case q.Has("versions"):
			return OpListObjectVersions
		case q.Has("uploads"):
			return OpListMultipartUploads
		case q.Has("location"):
			return OpGetBucketLocation
		case len(q) == 0 || onlyListParams(q):
			return OpListObjects
		}
		return OpGetBucketSubresource
	case http.MethodHead:
		return OpHeadBucket
	case http.MethodPut:
		if len(q) == 0 {
			return OpCreateBucket
		}
	case http.MethodDelete:
		if len(q) == 0 {
			return OpDeleteBucket
		}
	case http.MethodPost:
		if q.Has("delete") {
			return OpDeleteObjects
		}
	}
	return OpOther
}

// onlyListParams reports whether every query key is a ListObjects (v1)
// parameter.
func onlyListParams(q url.Values) bool {
	for k := range q {
		switch k {
		case "prefix", "delimiter", "marker", "max-keys", "encoding-type":
		default:
			return false
		}
	}
	return true
}
