//go:build unix

package datadir

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

const (
	accessRead   = 4 // R_OK
	accessWrite  = 2 // W_OK
	accessSearch = 1 // X_OK
)

// access reports whether this process may access p so (access(2), with
// the real user, which is the effective one for continuo): nil, or why
// not (EACCES, EROFS).
func access(p string, mode uint32) error {
	return syscall.Access(p, mode)
}

// owner names the user a file belongs to.
func owner(info fs.FileInfo) string {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return "another user"
	}
	return userName(int(st.Uid))
}

// self names the user this process runs as.
func self() string { return userName(os.Geteuid()) }

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// freeBytes is what an unprivileged process may still write on the file
// system holding p; -1 when unknown.
func freeBytes(p string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(p, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
