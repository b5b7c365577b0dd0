package s3

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	s3api "github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/siltsync/silt/backend"
)

// ranged checks the answer to a ranged GetObject and returns its body and
// the whole object's size. A 206 answer names the bytes it holds and the
// object's size in Content-Range ("bytes a-b/total"); ContentLength is only
// the range's. A store that ignored Range answers 200 with the whole
// object and no Content-Range (HTTP allows it): that body is skipped to
// the offset and cut at the range's end, so the caller still gets exactly
// the range. A 206 without Content-Range holds unknown bytes and is
// refused.
func ranged(op, key string, r backend.Range, out *s3api.GetObjectOutput) (io.ReadCloser, int64, error) {
	cr := strings.TrimSpace(aws.ToString(out.ContentRange))
	if cr == "" && status(out) == http.StatusPartialContent {
		return nil, 0, backend.Permanent(op, key, errors.New("206 answer to a ranged GetObject without Content-Range: which bytes it holds is unknown"))
	}
	if cr == "" {
		size := aws.ToInt64(out.ContentLength)
		if !r.Within(size) {
			return nil, 0, invalidRange(op, key, r, size)
		}
		return &skipBody{rc: out.Body, skip: r.Offset, r: io.LimitReader(out.Body, r.End())}, size, nil
	}
	first, last, size, err := parseContentRange(cr)
	if err != nil {
		return nil, 0, backend.Permanent(op, key, err)
	}
	switch {
	case !r.Within(size):
		// S3 cuts a range that ends past the object at its end.
		return nil, 0, invalidRange(op, key, r, size)
	case first != r.Offset || last != r.End()-1:
		return nil, 0, backend.Permanent(op, key, fmt.Errorf("asked for bytes %d-%d, the store sent Content-Range %q", r.Offset, r.End()-1, cr))
	}
	return out.Body, size, nil
}

// status is the HTTP status of a GetObject answer, 0 where the SDK kept
// no raw response.
func status(out *s3api.GetObjectOutput) int {
	if r, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok && r.Response != nil {
		return r.StatusCode
	}
	return 0
}

func invalidRange(op, key string, r backend.Range, size int64) error {
	return backend.RangeOutside(op, key, r, size)
}

// parseContentRange parses "bytes first-last/size" (RFC 9110, 14.4) with
// a known size.
func parseContentRange(cr string) (first, last, size int64, err error) {
	bad := func() (int64, int64, int64, error) {
		return 0, 0, 0, fmt.Errorf("malformed Content-Range %q in a ranged GetObject answer", cr)
	}
	spec, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return bad()
	}
	span, total, ok := strings.Cut(spec, "/")
	if !ok {
		return bad()
	}
	a, b, ok := strings.Cut(span, "-")
	if !ok {
		return bad()
	}
	var errs [3]error
	first, errs[0] = strconv.ParseInt(a, 10, 64)
	last, errs[1] = strconv.ParseInt(b, 10, 64)
	size, errs[2] = strconv.ParseInt(total, 10, 64)
	if errs[0] != nil || errs[1] != nil || errs[2] != nil || first < 0 || last < first || size <= last {
		return bad()
	}
	return first, last, size, nil
}

// skipBody discards skip bytes of a whole-object body before its first
// read; r is the body cut at the range's end.
type skipBody struct {
	rc   io.ReadCloser
	r    io.Reader
	skip int64
}

func (s *skipBody) Read(p []byte) (int, error) {
	if s.skip > 0 {
		n, err := io.CopyN(io.Discard, s.r, s.skip)
		s.skip -= n
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
	return s.r.Read(p)
}

func (s *skipBody) Close() error { return s.rc.Close() }
