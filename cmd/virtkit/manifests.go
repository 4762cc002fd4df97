package main

import (
	"fmt"
	"io"
	"os"

	"github.com/virtkit/virtkit"
)

// decodeFiles reads every object from files, directories (their .yaml,
// .yml and .json files) and "-" (standard input), in order.
func decodeFiles(paths []string) ([]virtkit.Object, error) {
	return decodeFilesFrom(os.Stdin, paths)
}

func decodeFilesFrom(stdin io.Reader, paths []string) ([]virtkit.Object, error) {
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
		files, err := manifestFiles(p, false)
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
