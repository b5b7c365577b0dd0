package blob_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	gcblob "gocloud.dev/blob"

	"github.com/siltsync/silt/backend"
	"github.com/siltsync/silt/conformance"
)

// SILT_TEST_AZBLOB_ENDPOINT is host:port of an Azurite blob service (or
// another Azure Blob emulator), reached with the account and key in
// AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY; .ci/run starts one.
// SILT_TEST_REQUIRE containing "azblob" turns the skip into a failure.
const envAzblobEndpoint = "SILT_TEST_AZBLOB_ENDPOINT"

var azPrefix atomic.Int64

// TestBackend_Azurite_Conformance runs the backend suite on blob+azblob://
// through backend.Open, each check under a fresh prefix of one container.
// The adapter claims AtomicCreate but no CAS, so the IfMatch checks skip,
// each naming the capability.
func TestBackend_Azurite_Conformance(t *testing.T) {
	conformance.RunBackend(t, azuriteFactory(t))
}

// TestBackend_Azurite_SyncerConformance runs the syncer suite on Azure
// Blob, a real store with create-if-absent and no compare-and-swap: the
// default format commits there with no commit lock.
func TestBackend_Azurite_SyncerConformance(t *testing.T) {
	conformance.RunSyncer(t, azuriteFactory(t))
}

// azuriteFactory opens a fresh prefix of one container per call, on the
// Azurite at SILT_TEST_AZBLOB_ENDPOINT; it skips t when that is unset.
func azuriteFactory(t *testing.T) conformance.Factory {
	endpoint := os.Getenv(envAzblobEndpoint)
	if endpoint == "" {
		if slices.Contains(strings.Split(os.Getenv("SILT_TEST_REQUIRE"), ","), "azblob") {
			t.Fatalf("%s is not set, but SILT_TEST_REQUIRE lists azblob", envAzblobEndpoint)
		}
		t.Skipf("%s not set (host:port of Azurite)", envAzblobEndpoint)
	}
	const cname = "silt-conformance"
	params := "localemu=true&protocol=http&domain=" + endpoint
	bkt, err := gcblob.OpenBucket(t.Context(), "azblob://"+cname+"?"+params)
	if err != nil {
		t.Fatalf("open container: %v", err)
	}
	var cc *container.Client
	if !bkt.As(&cc) {
		t.Fatal("azureblob bucket does not expose *container.Client")
	}
	if _, err := cc.Create(t.Context(), nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		t.Fatalf("create container %s: %v", cname, err)
	}
	bkt.Close()
	run := os.Getpid()
	return func(t *testing.T) backend.Backend {
		url := fmt.Sprintf("blob+azblob://%s?%s&prefix=run-%d-%d/", cname, params, run, azPrefix.Add(1))
		b, err := backend.Open(t.Context(), url)
		if err != nil {
			t.Fatalf("backend.Open(%s): %v", url, err)
		}
		return b
	}
}
