package s3

import (
	"bytes"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestConfigFromURL_Parameters(t *testing.T) {
	u, _ := url.Parse("s3://bkt/some/prefix?region=eu-west-1&endpoint=http://127.0.0.1:7070&use_path_style=true" +
		"&request_checksum_calculation=when_required&response_checksum_validation=when_required&disable_https=true" +
		"&conditional_delete=false&multipart_threshold=1000&part_size=6000000")
	got, err := configFromURL(u)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Bucket: "bkt", Prefix: "some/prefix/", Region: "eu-west-1", Endpoint: "http://127.0.0.1:7070",
		UsePathStyle: true, DisableHTTPS: true, DisableConditionalDelete: true,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		MultipartThreshold:         1000, PartSize: 6000000,
	}
	if got != want {
		t.Errorf("configFromURL =\n%+v, want\n%+v", got, want)
	}
}

func TestConfigFromURL_Defaults(t *testing.T) {
	u, _ := url.Parse("s3://bkt")
	got, err := configFromURL(u)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Config{Bucket: "bkt"}); got != want {
		t.Errorf("configFromURL = %+v, want %+v (conditional delete claimed by default)", got, want)
	}
}

func TestConfigFromURL_Rejects(t *testing.T) {
	for _, raw := range []string{
		"s3://bkt?regoin=eu-west-1",                       // typo: unknown parameter
		"s3://bkt?use_path_style=yes please",              // not a bool
		"s3://bkt?request_checksum_calculation=sometimes", // unknown mode
		"s3://bkt?part_size=-1",                           // not positive
		"s3:///prefix-only",                               // no bucket
		"s3://bkt/a/../b",                                 // prefix escapes
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := configFromURL(u); err == nil {
			t.Errorf("configFromURL(%q) succeeded, want an error", raw)
		}
	}
}

func TestConfig_EndpointWithoutScheme(t *testing.T) {
	for _, tc := range []struct {
		disableHTTPS bool
		want         string
	}{{false, "https://minio.local:9000"}, {true, "http://minio.local:9000"}} {
		c, err := Config{Bucket: "b", Endpoint: "minio.local:9000", DisableHTTPS: tc.disableHTTPS}.withDefaults()
		if err != nil || c.Endpoint != tc.want {
			t.Errorf("DisableHTTPS=%v: Endpoint = %q, %v; want %q", tc.disableHTTPS, c.Endpoint, err, tc.want)
		}
	}
}

func TestConfig_PartSizeFitsPartLimit(t *testing.T) {
	c, _ := Config{Bucket: "b"}.withDefaults()
	if got := c.partSize(1 << 20); got != DefaultPartSize {
		t.Errorf("partSize(1 MiB) = %d, want %d", got, DefaultPartSize)
	}
	huge := int64(DefaultPartSize)*maxParts + 1
	if ps := c.partSize(huge); (huge+ps-1)/ps > maxParts {
		t.Errorf("partSize(%d) = %d needs more than %d parts", huge, ps, maxParts)
	}
}

func TestWindow_ReadsAndSeeksOnlyItsRange(t *testing.T) {
	r := bytes.NewReader([]byte("0123456789"))
	w := &window{r: r, start: 3, n: 4}
	got, err := io.ReadAll(w)
	if err != nil || string(got) != "3456" {
		t.Fatalf("ReadAll = %q, %v; want 3456", got, err)
	}
	if end, _ := w.Seek(0, io.SeekEnd); end != 4 {
		t.Errorf("Seek(0, End) = %d, want 4", end)
	}
	if _, err := w.Seek(1, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(w)
	if string(got) != "456" {
		t.Errorf("after Seek(1) read %q, want 456", got)
	}
	if _, err := w.Seek(-1, io.SeekStart); err == nil {
		t.Error("Seek before the window succeeded")
	}
	short := &window{r: strings.NewReader("01"), start: 0, n: 5}
	if _, err := io.ReadAll(short); err != io.ErrUnexpectedEOF {
		t.Errorf("short body: err = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestConfigFromURL_ProfileAndUserInfo(t *testing.T) {
	u, _ := url.Parse("s3://AKIDURL:s3cr3t@bkt/p?profile=work")
	got, err := configFromURL(u)
	if err != nil {
		t.Fatal(err)
	}
	if got.Profile != "work" || got.AccessKeyID != "AKIDURL" || got.SecretAccessKey != "s3cr3t" || !got.fromURL {
		t.Errorf("configFromURL = %+v, want profile work and static AKIDURL/s3cr3t from the URL", got)
	}
	if src := credentialSource(got); src != "static from URL" {
		t.Errorf("credentialSource = %q, want static from URL", src)
	}
	for _, raw := range []string{"s3://bkt?profile=", "s3://onlykey@bkt", "s3://:secret@bkt"} {
		u, _ := url.Parse(raw)
		_, err := configFromURL(u)
		if err == nil {
			t.Errorf("%s: accepted", raw)
		} else if strings.Contains(err.Error(), "secret") && raw == "s3://:secret@bkt" {
			t.Errorf("%s: error %q shows the secret", raw, err)
		}
	}
}
