package main

import (
	"errors"
	"strconv"
)

// exitError ends the command with a status code after the command has
// printed its own output (validate prints its findings, then exits 1).
type exitError struct{ code int }

func (e exitError) Error() string { return "exit status " + strconv.Itoa(e.code) }

func asExit(err error, target *exitError) bool { return errors.As(err, target) }
