//go:build linux

package live

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/afpacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// ARPHRD types (linux/if_arp.h) of the interfaces whose frames start with
// an Ethernet header.
const (
	arphrdEther    = 1
	arphrdLoopback = 772
)

func open(opts Options) (*Source, error) {
	name := opts.Interface
	cfg := ringConfig{
		blockBytes:   blockBytes,
		blocks:       ringBlocks(opts.RingBytes),
		blockTimeout: opts.BlockTimeout,
		pollTimeout:  opts.PollTimeout,
		promiscuous:  opts.Promiscuous,
		filter:       filterSpec{ports: opts.Ports, snapLen: uint32(opts.SnapLen)},
	}
	if name == "any" {
		// The interfaces do not share a link-layer header: a cooked socket
		// gives every packet from its IP header on, as libpcap's "any".
		cfg.cooked = true
		cfg.filter.link = layers.LinkTypeRaw
		cfg.filter.loopbacks = loopbacks()
	} else {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			var oe *net.OpError
			if errors.As(err, &oe) {
				err = oe.Err
			}
			return nil, fmt.Errorf("live: opening %s: %w", name, err)
		}
		cfg.iface = name
		cfg.filter.link, cfg.cooked = linkOf(name)
		cfg.filter.rejectOutgoing = ifi.Flags&net.FlagLoopback != 0
	}
	openRing := opts.openRing
	if openRing == nil {
		openRing = openTPacket
	}
	r, err := openRing(cfg)
	if err != nil {
		return nil, openError(name, err)
	}
	return newSource(r, name, cfg.filter.link, time.Now()), nil
}

// linkOf says what the frames of an interface start with: an Ethernet
// header (Ethernet and loopback interfaces, read with a raw socket), or
// anything else (tunnels, PPP, ...), read with a cooked socket from the IP
// header on.
func linkOf(name string) (link layers.LinkType, cooked bool) {
	b, err := os.ReadFile(filepath.Join("/sys/class/net", name, "type"))
	if err == nil {
		switch t, _ := strconv.Atoi(strings.TrimSpace(string(b))); t {
		case arphrdEther, arphrdLoopback:
			return layers.LinkTypeEthernet, false
		}
	}
	return layers.LinkTypeRaw, true
}

// loopbacks returns the indexes of the loopback interfaces.
func loopbacks() []uint32 {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var idx []uint32
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagLoopback != 0 {
			idx = append(idx, uint32(ifi.Index))
		}
	}
	return idx
}

// openError turns a failure to open the socket into the error Open
// returns: a *PermissionError when the privilege is missing.
func openError(name string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && (errno == syscall.EPERM || errno == syscall.EACCES) {
		exe, xerr := os.Executable()
		if xerr != nil {
			exe = "/path/to/kdupcap"
		}
		return &PermissionError{Interface: name, Executable: exe, Err: errno}
	}
	return fmt.Errorf("live: opening %s: %w", name, err)
}

// openTPacket opens an AF_PACKET socket with a TPACKET_V3 ring and
// attaches the kernel filter.
func openTPacket(cfg ringConfig) (ring, error) {
	prog, err := filterProgram(cfg.filter)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("live: assembling the kernel filter: %w", err)
	}
	socket := afpacket.SocketRaw
	if cfg.cooked {
		socket = afpacket.SocketDgram
	}
	tp, err := afpacket.NewTPacket(
		afpacket.OptInterface(cfg.iface),
		afpacket.OptTPacketVersion(afpacket.TPacketVersion3),
		afpacket.OptSocketType(socket),
		afpacket.OptBlockSize(cfg.blockBytes),
		afpacket.OptNumBlocks(cfg.blocks),
		afpacket.OptBlockTimeout(cfg.blockTimeout),
		afpacket.OptPollTimeout(cfg.pollTimeout),
	)
	if err != nil {
		return nil, err
	}
	if err := tp.SetBPF(raw); err != nil {
		tp.Close()
		return nil, fmt.Errorf("attaching the kernel filter: %w", err)
	}
	if cfg.promiscuous {
		if err := tp.SetPromiscuous(true); err != nil {
			tp.Close()
			return nil, fmt.Errorf("promiscuous mode: %w", err)
		}
	}
	return tpRing{tp}, nil
}

// tpRing is an afpacket.TPacket as a ring.
type tpRing struct{ tp *afpacket.TPacket }

func (r tpRing) ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	data, ci, err := r.tp.ZeroCopyReadPacketData()
	if err == afpacket.ErrTimeout {
		err = ErrTimeout
	}
	return data, ci, err
}

func (r tpRing) socketStats() (packets, drops, freezes uint32, err error) {
	_, v3, err := r.tp.SocketStats()
	return uint32(v3.Packets()), uint32(v3.Drops()), uint32(v3.QueueFreezes()), err
}

func (r tpRing) Close() { r.tp.Close() }

func dropPrivileges(name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		if _, nerr := strconv.Atoi(name); nerr != nil {
			return err
		}
		if u, err = user.LookupId(name); err != nil {
			return err
		}
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return fmt.Errorf("user ID %q: %w", u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return fmt.Errorf("group ID %q: %w", u.Gid, err)
	}
	if os.Getuid() == uid && os.Geteuid() == uid && os.Getgid() == gid && os.Getegid() == gid {
		return nil // already that user
	}
	groups := []int{gid}
	if ids, err := u.GroupIds(); err == nil {
		groups = groups[:0]
		for _, id := range ids {
			g, err := strconv.Atoi(id)
			if err != nil {
				return fmt.Errorf("group ID %q: %w", id, err)
			}
			groups = append(groups, g)
		}
	}
	// Since Go 1.16 these change the IDs of every thread of the process.
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("setgid %d: %w", gid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid %d: %w", uid, err)
	}
	if os.Getuid() != uid || os.Geteuid() != uid || os.Getgid() != gid || os.Getegid() != gid {
		return fmt.Errorf("IDs are %d/%d (group %d/%d) after the change", os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid())
	}
	if uid != 0 && syscall.Setuid(0) == nil {
		return errors.New("root could be regained")
	}
	return nil
}
