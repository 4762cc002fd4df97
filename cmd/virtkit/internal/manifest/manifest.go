package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/virtkit/virtkit"
)

// Decode reads every object from files, directories (their .yaml, .yml
// and .json files) and "-" (stdin), in order, decoded, as the library's
// Apply takes them.
func Decode(stdin io.Reader, paths []string) ([]virtkit.Object, error) {
	var out []virtkit.Object
	for _, p := range paths {
		if p == "-" {
			objs, err := virtkit.Decode(stdin)
			if err != nil {
				return nil, fmt.Errorf("<stdin>: %w", err)
			}
			out = append(out, objs...)
			continue
		}
		files, err := Files(p, false)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			f, err := os.Open(file)
			if err != nil {
				return nil, err
			}
			objs, err := virtkit.Decode(f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

// Read reads the objects of files, directories (their .yaml, .yml
// and .json files) and "-" (standard input) as the server will decode them,
// without local defaulting; a List contributes its items.
func Read(stdin io.Reader, paths []string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	read := func(name string, r io.Reader) error {
		data, err := io.ReadAll(io.LimitReader(r, virtkit.MaxManifestBytes+1))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(data) > virtkit.MaxManifestBytes {
			return fmt.Errorf("%s: larger than %d bytes", name, virtkit.MaxManifestBytes)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for doc := 0; ; doc++ {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: document %d: %w", name, doc, err)
			}
			if len(m) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			if u.IsList() {
				list, err := u.ToList()
				if err != nil {
					return fmt.Errorf("%s: document %d: %w", name, doc, err)
				}
				for i := range list.Items {
					out = append(out, &list.Items[i])
				}
				continue
			}
			if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
				return fmt.Errorf("%s: document %d: apiVersion, kind and metadata.name are required", name, doc)
			}
			out = append(out, u)
		}
	}
	for _, p := range paths {
		if p == "-" {
			if err := read("<stdin>", stdin); err != nil {
				return nil, err
			}
			continue
		}
		files, err := Files(p, false)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			f, err := os.Open(file)
			if err != nil {
				return nil, err
			}
			err = read(file, f)
			f.Close()
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Files is the manifest files of path: path itself when it is a file, else
// the .yaml, .yml and .json files in the directory (and with recursive in
// its subdirectories), sorted.
func Files(path string, recursive bool) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != path && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}
