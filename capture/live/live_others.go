//go:build !linux

package live

import "fmt"

func open(opts Options) (*Source, error) {
	return nil, fmt.Errorf("live: opening %s: %w", opts.Interface, ErrUnsupported)
}

func dropPrivileges(string) error { return ErrUnsupported }
