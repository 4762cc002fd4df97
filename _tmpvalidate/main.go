package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{Use: "virtkit", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newValidateCmd())
	if err := root.Execute(); err != nil {
		var ex exitError
		if asExit(err, &ex) {
			os.Exit(ex.code)
		}
		fmt.Fprintln(os.Stderr, "virtkit:", err)
		os.Exit(1)
	}
}
