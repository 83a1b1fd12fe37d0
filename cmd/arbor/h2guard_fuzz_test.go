package main

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// fuzzHeaderLimit is the guard's header list limit in FuzzH2Guard, small
// enough for the fuzzer to pass it.
const fuzzHeaderLimit = 2048

// FuzzH2Guard feeds a client's byte stream to the guard in pieces of
// varied sizes (split seeds the sizes). Whatever the bytes, the guard
// does not panic and passes on exactly what it was given — all of it but
// an unfinished frame it waits for, or when it refuses a request, a
// prefix ending before the refused block (from which on nothing passes,
// even before the block ends) —
// and an answer it makes is well-formed frames on the refused stream.
func FuzzH2Guard(f *testing.F) {
	for _, seed := range h2GuardSeeds() {
		f.Add(seed, uint8(7))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		g := newH2Guard(&recordingConn{w: &bytes.Buffer{}}, fuzzHeaderLimit)
		var out []byte
		step := 1 + int(split)%64
		for rest := in; len(rest) > 0 && !g.refused; {
			n := min(step, len(rest))
			out = append(out, g.scan(rest[:n], nil)...)
			rest, step = rest[n:], 1+(step*7+3)%97
		}
		if !bytes.HasPrefix(in, out) {
			t.Fatalf("the guard passed on bytes it was not given:\n%q\nof\n%q", out, in)
		}
		if g.dropping && (g.stream == 0 || g.stream%2 == 0) {
			t.Fatalf("dropping the block of stream %d", g.stream)
		}
		if !g.refused && !g.dropping {
			// Only an unfinished frame header, or header frame, waits.
			pending := 0
			if g.hdrN < h2FrameHeaderLen {
				pending = g.hdrN
			}
			if g.holding {
				pending += len(g.held)
			}
			if len(out)+pending != len(in) {
				t.Fatalf("the guard held back %d of %d bytes without refusing (%d pending)", len(in)-len(out), len(in), pending)
			}
			return
		}
		if !g.refused {
			return // a refused block not ended yet: nothing passes meanwhile
		}
		fr := http2.NewFramer(nil, bytes.NewReader(g.answer))
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		var kinds []string
		for {
			frame, err := fr.ReadFrame()
			if err != nil {
				break
			}
			if id := frame.Header().StreamID; id != g.stream && id != 0 {
				t.Fatalf("answer frame on stream %d, refused %d", id, g.stream)
			}
			kinds = append(kinds, frame.Header().Type.String())
		}
		if got := strings.Join(kinds, " "); got != "HEADERS DATA GOAWAY" {
			t.Fatalf("answer frames: %s", got)
		}
	})
}

// h2GuardSeeds are client streams: requests the guard passes, in plain,
// padded, prioritized and split frames, with trailers and other frames
// between; and requests it refuses.
func h2GuardSeeds() [][]byte {
	var seeds [][]byte
	stream := func(write func(fr *http2.Framer, enc func(fields ...string) []byte)) []byte {
		var b bytes.Buffer
		b.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&b, nil)
		var hb bytes.Buffer
		e := hpack.NewEncoder(&hb)
		enc := func(fields ...string) []byte {
			hb.Reset()
			for i := 0; i+1 < len(fields); i += 2 {
				_ = e.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
			}
			return bytes.Clone(hb.Bytes())
		}
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
		write(fr, enc)
		return b.Bytes()
	}
	req := []string{":method", "GET", ":scheme", "https", ":authority", "x", ":path", "/a.json"}
	with := func(extra ...string) []string { return append(append([]string{}, req...), extra...) }
	seeds = append(seeds, stream(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(with("x-a", "1")...), EndStream: true, EndHeaders: true})
		_ = fr.WritePing(false, [8]byte{1})
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: enc(with("x-a", "1")...), EndStream: true, EndHeaders: true, PadLength: 3,
			Priority: http2.PriorityParam{StreamDep: 1, Weight: 9}})
		_ = fr.WriteWindowUpdate(0, 100)
	}))
	seeds = append(seeds, stream(func(fr *http2.Framer, enc func(...string) []byte) {
		b := enc(with("x-b", strings.Repeat("b", 300))...)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:10], EndHeaders: false})
		_ = fr.WriteContinuation(1, false, b[10:100])
		_ = fr.WriteContinuation(1, true, b[100:])
		_ = fr.WriteData(1, false, []byte("body"))
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc("x-trailer", "t"), EndStream: true, EndHeaders: true})
		_ = fr.WriteRSTStream(1, http2.ErrCodeCancel)
	}))
	seeds = append(seeds, stream(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(with("connection", "close")...), EndStream: true, EndHeaders: true})
	}))
	seeds = append(seeds, stream(func(fr *http2.Framer, enc func(...string) []byte) {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(with("te", "gzip")...), EndStream: true, EndHeaders: true})
	}))
	seeds = append(seeds, stream(func(fr *http2.Framer, enc func(...string) []byte) {
		b := enc(with("x-big", strings.Repeat("z", fuzzHeaderLimit))...)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:len(b)/2], EndStream: true})
		_ = fr.WriteContinuation(1, true, b[len(b)/2:])
	}))
	seeds = append(seeds, stream(func(fr *http2.Framer, enc func(...string) []byte) {
		entry := strings.Repeat("e", 500)
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: enc(with("x-e", entry)...), EndStream: true, EndHeaders: true})
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: enc(with("x-e", entry, "x-e", entry, "x-e", entry, "x-e", entry)...), EndStream: true, EndHeaders: true})
	}))
	return seeds
}
