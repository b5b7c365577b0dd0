// Package seal is client-side encryption of a bucket: the layer that
// stores every object of a repository encrypted and authenticated under
// its keyring, and the key files that wrap the keyring under passphrases
// (FORMAT.md, "Encryption").
//
// The layer sits over the store as users open it ([Open] over what
// backend.Open returns), below everything that reads or writes the
// index, so the syncer, gc, locks, control records and namespaces work on
// plain keys and plain bytes unchanged, and the bucket holds:
//
//   - sealed objects (log entries, checkpoints, the hint, shards, pages,
//     control records, locks, namespaces): Magic, a version, the data
//     key's generation, then XChaCha20-Poly1305 of the plain bytes bound
//     to the plain key, so bytes moved to another key do not open;
//   - content-named objects (objects/, packs/): the plain bytes XORed
//     with an XChaCha20 keystream of their name, byte for byte, so a
//     ranged read of one packed frame is still one ranged read; their
//     integrity is the sealed index's, which holds the hash of their
//     plain bytes that every reader checks;
//   - names: content hashes under a keyed permutation of the same length
//     (a guessed file cannot be confirmed by its sha256), path segments
//     (namespaces, control keys, lock names) sealed deterministically,
//     sequence numbers and the layout's own names as they are;
//   - .silt/keys/: the config and the key files, as they are.
//
// A reader of the bucket learns sizes, counts and times, not names or
// bytes. A reader without the passphrase learns from the index that the
// bucket is encrypted (index.ErrEncrypted), and nothing else.
package seal
