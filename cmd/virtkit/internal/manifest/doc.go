// Package manifest reads the virtkit CLI's manifest arguments (-f FILE,
// a directory of .yaml, .yml and .json files, or "-" for stdin): decoded
// into virtkit's types ([Decode]), as the server will decode them
// ([Read]), or only listed ([Files]).
package manifest
