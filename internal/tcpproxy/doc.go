// Package tcpproxy is a TCP proxy a test controls, for fault injection: it
// forwards every connection made to its loopback listener to one target
// address and can cut the link to simulate a network partition, then heal
// it.
//
// A cut link behaves like a partition in which packets are lost rather than
// refused: connections stay open, bytes stop flowing in both directions
// (what was in flight is held, not dropped), and new connections are
// accepted but not forwarded. Peers see no error, only silence, until their
// own keepalives or deadlines give up on the connection. Healing the link
// forwards what was held and dials the connections that waited. A link can
// also be made slow (a fixed latency per chunk of bytes).
package tcpproxy
