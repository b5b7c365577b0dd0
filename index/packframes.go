package index

import "github.com/siltsync/silt/internal/frame"

// PackPlace is where a member landed in a pack built by a PackBuilder:
// its frame at Off, Z bytes long, decoding to ZN bytes that hold the
// member at In (the entry fields of the same names).
type PackPlace struct {
	Off, Z, ZN, In int64
}

// PackBuilder lays out a format-6 pack (FORMAT.md, "Packs"): members
// below FrameGroup, in the order added, share a zstd frame until it holds
// FrameGroup bytes, so zstd finds what neighbouring files have in common;
// a larger member is a frame of its own. A caller fills each member's
// bytes in place (Next), then keeps or drops them.
type PackBuilder struct {
	buf    []byte
	group  []byte
	at     int // start of the bytes Next handed out
	places []PackPlace
	open   int // first place in the open group
}

// NewPackBuilder returns a builder for members of at most largest bytes
// each and total bytes together.
func NewPackBuilder(largest, total int64, members int) *PackBuilder {
	// A frame is never larger than its bytes and the header: the pack is
	// allocated once.
	return &PackBuilder{
		buf:   make([]byte, 0, total+int64(members)*frame.HeaderLen),
		group: make([]byte, 0, max(largest, MaxFrameGroup)),
	}
}

// Next returns n bytes for the next member's plain bytes, to be filled
// by the caller before Keep or Drop.
func (p *PackBuilder) Next(n int64) []byte {
	if n >= FrameGroup {
		p.flush() // a frame of its own
	}
	p.at = len(p.group)
	p.group = p.group[:p.at+int(n)]
	return p.group[p.at:]
}

// Drop forgets the bytes Next handed out: they are no member.
func (p *PackBuilder) Drop() { p.group = p.group[:p.at] }

// Keep makes the bytes Next handed out the next member; its place is
// final after Finish.
func (p *PackBuilder) Keep() {
	p.places = append(p.places, PackPlace{In: int64(p.at)})
	if len(p.group) >= FrameGroup {
		p.flush()
	}
}

func (p *PackBuilder) flush() {
	if len(p.group) == 0 {
		return
	}
	off := int64(len(p.buf))
	p.buf = append(p.buf, frame.Encode(p.group, frame.Zstd)...)
	for i := p.open; i < len(p.places); i++ {
		p.places[i].Off, p.places[i].Z, p.places[i].ZN = off, int64(len(p.buf))-off, int64(len(p.group))
	}
	p.group, p.open = p.group[:0], len(p.places)
}

// Finish closes the last frame and returns the pack's bytes and the
// places of the members kept, in the order kept.
func (p *PackBuilder) Finish() ([]byte, []PackPlace) {
	p.flush()
	return p.buf, p.places
}
