package crypt_test

import (
	"errors"
	"fmt"

	"github.com/siltsync/silt/internal/crypt"
)

// An object is sealed bound to its name (and, later, its frame header):
// the same bytes under another name do not open.
func ExampleKeyring_Seal() {
	ring, err := crypt.NewKeyring()
	if err != nil {
		panic(err)
	}
	name := []byte("data/aws/ec2/vpc/m00001/1.yaml")
	gen, sealed := ring.Seal(nil, []byte("cidr: 10.0.0.0/24\n"), name)

	plain, err := ring.Open(nil, gen, sealed, name)
	fmt.Printf("generation %d: %q, %v\n", gen, plain, err)

	_, err = ring.Open(nil, gen, sealed, []byte("data/aws/ec2/vpc/m00002/1.yaml"))
	fmt.Println(errors.Is(err, crypt.ErrAuth))
	// Output:
	// generation 1: "cidr: 10.0.0.0/24\n", <nil>
	// true
}

// A key file wraps the ring under a passphrase; a second file under
// another passphrase is a second key to the same ring.
func ExampleWrap() {
	ring, err := crypt.NewKeyring()
	if err != nil {
		panic(err)
	}
	// Real key files use crypt.DefaultKDFParams.
	alice, err := crypt.Wrap(ring, []byte("alice's passphrase"), crypt.TestKDFParams, "laptop/alice")
	if err != nil {
		panic(err)
	}
	bob, err := crypt.Wrap(ring, []byte("bob's passphrase"), crypt.TestKDFParams, "ci/bob")
	if err != nil {
		panic(err)
	}
	stored := crypt.EncodeKeyFile(bob)

	loaded, err := crypt.DecodeKeyFile(stored)
	if err != nil {
		panic(err)
	}
	opened, used, err := crypt.UnlockAny([]*crypt.KeyFile{alice, loaded}, []byte("bob's passphrase"))
	fmt.Println(err, used.Label, opened.Name([]byte("x")) == ring.Name([]byte("x")))

	_, err = alice.Unwrap([]byte("guess"))
	fmt.Println(errors.Is(err, crypt.ErrWrongPassphrase))
	fmt.Println(opened)
	// Output:
	// <nil> ci/bob true
	// true
	// crypt.Keyring(generations 1, current 1, keys redacted)
}
