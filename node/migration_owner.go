package node

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/virtkit/virtkit/domain"
)

// errNoVirtkitMetadata is returned by retargetOwner for a domain XML
// without virtkit's metadata element.
var errNoVirtkitMetadata = errors.New("no virtkit metadata in the domain XML")

// retargetOwner returns domainXML with the <node> of its virtkit metadata
// (<metadata><kubevirt xmlns="http://kubevirt.io">) set to node, the rest
// of the document byte for byte as it was. A migration sends its guest
// with the target's name in it, so the domain that arrives is the target
// agent's by what the host alone says: after the target took the VMI
// over, and after the VMI is gone or has failed, as for any other domain
// of that node.
func retargetOwner(domainXML, node string) (string, error) {
	dec := xml.NewDecoder(strings.NewReader(domainXML))
	var path []xml.Name
	// Offsets of the <node> element's content, or of the end tag of the
	// kubevirt element when it has no <node>.
	contentStart, contentEnd, kubevirtEnd := int64(-1), int64(-1), int64(-1)
	inKubevirt := func() bool {
		return len(path) >= 3 && path[0].Local == "domain" && path[1].Local == "metadata" &&
			path[2].Local == "kubevirt" && path[2].Space == domain.KubeVirtMetadataNamespace
	}
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("domain XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name)
			if len(path) == 4 && inKubevirt() && t.Name.Local == "node" && contentStart < 0 {
				contentStart = dec.InputOffset()
			}
		case xml.EndElement:
			switch {
			case len(path) == 4 && inKubevirt() && t.Name.Local == "node" && contentStart >= 0 && contentEnd < 0:
				contentEnd = before
			case len(path) == 3 && inKubevirt() && kubevirtEnd < 0:
				kubevirtEnd = before
			}
			path = path[:len(path)-1]
		}
	}
	var esc bytes.Buffer
	if err := xml.EscapeText(&esc, []byte(node)); err != nil {
		return "", err
	}
	switch {
	case contentStart >= 0 && contentEnd >= contentStart:
		return domainXML[:contentStart] + esc.String() + domainXML[contentEnd:], nil
	case kubevirtEnd >= 0:
		return domainXML[:kubevirtEnd] + "<node>" + esc.String() + "</node>" + domainXML[kubevirtEnd:], nil
	}
	return "", errNoVirtkitMetadata
}

// destinationOwner returns the destination XML of a migration to target
// (dest, or the source's XML when dest is empty) naming target in its
// virtkit metadata. A domain without that metadata keeps its XML.
func (a *Agent) destinationOwner(ctx context.Context, domName, dest, target string) (string, error) {
	if dest == "" {
		x, err := a.migrationSourceXML(ctx, domName)
		if err != nil {
			return "", fmt.Errorf("source domain XML: %w", err)
		}
		dest = x
	}
	x, err := retargetOwner(dest, target)
	if errors.Is(err, errNoVirtkitMetadata) {
		return dest, nil
	}
	if err != nil {
		return "", fmt.Errorf("destination XML: %w", err)
	}
	return x, nil
}
