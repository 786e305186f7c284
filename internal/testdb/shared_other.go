//go:build !unix

package testdb

// sharedURL: the shared throwaway cluster needs flock and su (Unix).
func sharedURL() (string, error) {
	return "", &unavailableError{"a throwaway cluster needs a Unix system"}
}
