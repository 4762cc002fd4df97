// Package examples holds runnable programs that show virtkit in use; each
// subdirectory is one program and its test runs it.
package examples
