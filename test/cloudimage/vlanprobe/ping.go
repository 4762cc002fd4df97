package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// errNoReply: no echo reply came back.
var errNoReply = errors.New("no echo reply")

// ping sends up to tries ICMP echo requests to addr, one per second, and
// returns nil at the first reply.
func ping(addr string, tries int) error {
	dst, err := net.ResolveIPAddr("ip4", addr)
	if err != nil {
		return err
	}
	c, err := net.ListenIP("ip4:icmp", nil)
	if err != nil {
		return fmt.Errorf("raw ICMP socket: %w", err)
	}
	defer c.Close()
	id := os.Getpid() & 0xffff
	buf := make([]byte, 1500)
	for seq := 1; seq <= tries; seq++ {
		if _, err := c.WriteToIP(echoRequest(id, seq), dst); err != nil {
			return fmt.Errorf("send to %s: %w", addr, err)
		}
		deadline := time.Now().Add(time.Second)
		if err := c.SetReadDeadline(deadline); err != nil {
			return err
		}
		for {
			n, from, err := c.ReadFromIP(buf)
			if err != nil {
				break // the deadline: send again
			}
			// An echo reply (type 0) to this id and sequence, from addr.
			if n >= 8 && buf[0] == 0 && from.IP.Equal(dst.IP) &&
				int(buf[4])<<8|int(buf[5]) == id && int(buf[6])<<8|int(buf[7]) == seq {
				return nil
			}
		}
	}
	return fmt.Errorf("%s: %w after %d requests", addr, errNoReply, tries)
}

// echoRequest is an ICMP echo request with 32 bytes of data.
func echoRequest(id, seq int) []byte {
	b := make([]byte, 8+32)
	b[0] = 8 // echo request
	b[4], b[5] = byte(id>>8), byte(id)
	b[6], b[7] = byte(seq>>8), byte(seq)
	for i := 8; i < len(b); i++ {
		b[i] = byte(i)
	}
	var sum uint32
	for i := 0; i < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	cs := ^uint16(sum)
	b[2], b[3] = byte(cs>>8), byte(cs)
	return b
}
