package peers

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/sync/errgroup"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/backend/s3"
)

// seedWorkers is how many objects seedObjects uploads at once.
const seedWorkers = 32

// seedObjects uploads the tree at generation 0 as plain objects under
// c's bucket and prefix: the remote state of a tool that keeps none of its
// own (rclone, the AWS CLI) after a sync of a local copy written by
// [Tree.Write] earlier. It goes through silt's S3 backend, unmeasured.
func seedObjects(ctx context.Context, ep endpoint, c copyOf, t Tree) error {
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: ep.access, SecretAccessKey: ep.secret}, nil
	})
	b, err := s3.New(ctx, s3.Config{Bucket: c.bucket, Prefix: c.prefix, Region: ep.region, Endpoint: ep.url,
		UsePathStyle: true, AWSConfig: &aws.Config{Credentials: creds}})
	if err != nil {
		return fmt.Errorf("peers: seed %s: %w", c.remote(""), err)
	}
	defer b.Close()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(seedWorkers)
	for _, m := range t.Models {
		for _, p := range m.Files() {
			g.Go(func() error {
				data := Content(p, 0)
				_, err := b.Put(ctx, p, bytes.NewReader(data), int64(len(data)), backend.Cond{})
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("peers: seed %s: %w", c.remote(""), err)
	}
	return nil
}
