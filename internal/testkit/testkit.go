// Package testkit holds small helpers shared by the tests of several
// packages.
package testkit

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// SyncBuffer is a writer that a test reads while other goroutines (a
// server's, a child process's stderr copier) write to it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// RandomName is prefix followed by 12 random hex digits: the name of a
// schema or database of one test's own.
func RandomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
