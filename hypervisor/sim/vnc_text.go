package sim

import (
	"fmt"
	"image"
	"strings"
)

// VNCText reads back the text a simulated display shows: img is its
// framebuffer (640x400, as a VNC client received it), the result its 25
// lines without trailing blanks. A cell matching no glyph of the
// display's font reads as U+FFFD; the cursor's inverted cell reads as its
// character. Harnesses check what a VNC viewer would show with it.
func VNCText(img image.Image) ([]string, error) {
	f, err := newFont()
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
	if b.Dx() != termCols*cellWidth || b.Dy() != termRows*cellHeight {
		return nil, fmt.Errorf("framebuffer %v: not a simulated display's %dx%d", b.Size(), termCols*cellWidth, termRows*cellHeight)
	}
	glyphs := make(map[glyph]rune, 2*0x5f)
	for ch := 0x7e; ch >= 0x20; ch-- {
		g := f[ch]
		glyphs[g] = rune(ch)
		for i := range g {
			g[i] = ^g[i]
		}
		if _, dup := glyphs[g]; !dup {
			glyphs[g] = rune(ch)
		}
	}
	lines := make([]string, termRows)
	for row := range termRows {
		var sb strings.Builder
		for col := range termCols {
			var g glyph
			for y := range cellHeight {
				for x := range cellWidth {
					r, gr, bl, _ := img.At(b.Min.X+col*cellWidth+x, b.Min.Y+row*cellHeight+y).RGBA()
					if r+gr+bl > 3*0x7fff {
						g[y] |= 0x80 >> x
					}
				}
			}
			ch, ok := glyphs[g]
			if !ok {
				ch = '\uFFFD'
			}
			sb.WriteRune(ch)
		}
		lines[row] = strings.TrimRight(sb.String(), " ")
	}
	return lines, nil
}
