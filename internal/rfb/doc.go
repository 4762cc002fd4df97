// Package rfb is a minimal VNC client (RFB 3.8, RFC 6143): security type
// None, 32-bit true colour, Raw encoding, pointer events, a bounded
// framebuffer size. It takes screenshots for `virtkit vnc --screenshot`
// and the node endpoint's vnc/screenshot, and drives displays in tests.
package rfb
