package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3api "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/siltsync/silt/backend"
)

// abortTimeout bounds the clean-up of a failed upload, which runs even when
// the caller's context is already cancelled.
const abortTimeout = 30 * time.Second

// putMultipart uploads size bytes of body from offset start as a multipart
// upload. It is written out rather than using feature/s3/manager so that
// the condition goes on CompleteMultipartUpload (the only request that
// publishes the object) and the new version is that request's ETag. Parts
// are sent one after another, straight from body: the throughput of one
// connection, and no part buffers.
//
// The condition is checked only at completion, so a Put that loses a race
// has uploaded every part first; conditional writes in silt are small
// metadata objects, well under the threshold.
func (b *Backend) putMultipart(ctx context.Context, key string, body io.ReadSeeker, start, size int64, cond backend.Cond) (_ backend.ObjectInfo, err error) {
	full := b.full(key)
	// Declare the part checksum up front, as the SDK's upload manager does:
	// S3 rejects a completion whose parts carry checksums the upload was
	// not created with.
	var alg types.ChecksumAlgorithm
	if b.cfg.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenRequired {
		alg = types.ChecksumAlgorithmCrc32
	}
	created, err := b.client.CreateMultipartUpload(ctx, &s3api.CreateMultipartUploadInput{
		Bucket: &b.cfg.Bucket, Key: full, ChecksumAlgorithm: alg,
	})
	if err != nil {
		return backend.ObjectInfo{}, b.classify("put", key, err)
	}
	id := created.UploadId
	completed := false
	defer func() {
		if !completed {
			err = errors.Join(err, b.abort(ctx, full, id))
		}
	}()

	ps := b.cfg.partSize(size)
	var parts []types.CompletedPart
	for n, off := int32(1), int64(0); off < size; n, off = n+1, off+ps {
		w := &window{r: body, start: start + off, n: min(ps, size-off)}
		out, err := b.client.UploadPart(ctx, &s3api.UploadPartInput{
			Bucket: &b.cfg.Bucket, Key: full, UploadId: id,
			PartNumber: aws.Int32(n), Body: w, ContentLength: aws.Int64(w.n),
			ChecksumAlgorithm: alg,
		})
		if err != nil {
			return backend.ObjectInfo{}, b.classify("put", key, err)
		}
		parts = append(parts, types.CompletedPart{
			PartNumber: aws.Int32(n), ETag: out.ETag,
			ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C,
			ChecksumCRC64NVME: out.ChecksumCRC64NVME,
			ChecksumSHA1:      out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256,
		})
	}

	in := &s3api.CompleteMultipartUploadInput{
		Bucket: &b.cfg.Bucket, Key: full, UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}
	in.IfNoneMatch, in.IfMatch = condHeaders(cond)
	out, err := b.client.CompleteMultipartUpload(ctx, in)
	if err != nil {
		return backend.ObjectInfo{}, b.classify("put", key, err)
	}
	completed = true
	v, err := version("put", key, out.ETag)
	if err != nil {
		return backend.ObjectInfo{}, err
	}
	return backend.ObjectInfo{Key: key, Size: size, Version: v}, nil
}

// abort releases a failed upload's parts, which S3 would otherwise store
// (and bill) until a lifecycle rule removes them. Its error is joined to
// the Put's, so an orphaned upload is reported, not silently left.
func (b *Backend) abort(ctx context.Context, full, id *string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_, err := b.client.AbortMultipartUpload(ctx, &s3api.AbortMultipartUploadInput{Bucket: &b.cfg.Bucket, Key: full, UploadId: id})
	var gone *types.NoSuchUpload
	if err == nil || errors.As(err, &gone) {
		return nil
	}
	return fmt.Errorf("abort multipart upload %s (its parts stay billed until a lifecycle rule removes them): %w", aws.ToString(id), err)
}
