package subresources

import (
	"context"
	"errors"
	"time"

	"github.com/gorilla/websocket"
)

// bridge copies data messages between two WebSockets until both
// directions end, one fails, or ctx ends, then closes both. A normal close
// frame from one side ends that direction only (a half-close: the node
// agent half-closes the guest's TCP connection and keeps sending its
// reply): it is passed on to the other side, and the other direction goes
// on until that side's close frame.
func bridge(ctx context.Context, a, b *websocket.Conn) error {
	noEcho := func(int, string) error { return nil }
	a.SetCloseHandler(noEcho)
	b.SetCloseHandler(noEcho)
	errc := make(chan error, 2)
	cp := func(dst, src *websocket.Conn) {
		for {
			mt, data, err := src.ReadMessage()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) && (ce.Code == websocket.CloseNormalClosure || ce.Code == websocket.CloseGoingAway) {
					msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
					if werr := dst.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)); werr != nil {
						err = werr
					} else {
						err = nil
					}
				}
				errc <- err
				return
			}
			if mt != websocket.BinaryMessage && mt != websocket.TextMessage {
				continue
			}
			if err := dst.WriteMessage(websocket.BinaryMessage, data); err != nil {
				errc <- err
				return
			}
		}
	}
	go cp(a, b)
	go cp(b, a)
	var err error
	for done := 0; done < 2 && err == nil; done++ {
		select {
		case <-ctx.Done():
			done = 2
		case err = <-errc:
		}
	}
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	deadline := time.Now().Add(time.Second)
	_ = a.WriteControl(websocket.CloseMessage, msg, deadline)
	_ = b.WriteControl(websocket.CloseMessage, msg, deadline)
	_ = a.Close()
	_ = b.Close()
	if err == nil || websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
		return nil
	}
	return err
}
