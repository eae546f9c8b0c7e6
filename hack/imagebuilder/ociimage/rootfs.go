package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// passwd and group name the image's users the way distroless's static image does, so
// tools that resolve 65532 (and Go's os/user) find "nonroot".
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

// entry is one file or directory of the root filesystem.
type entry struct {
	path     string
	mode     int64
	uid, gid int
	// content is nil for a directory; contentFile, when set, is read instead.
	content     []byte
	contentFile string
}

// rootFS lists the image's files in the order they are archived, parents first: the
// binary, the CA bundle, the user database, the nonroot user's home and a world-writable
// /tmp (with the sticky bit) for the code that wants a temporary directory.
func rootFS(binaryFile string, caBundle []byte) []entry {
	dir := func(path string, mode int64) entry { return entry{path: path, mode: mode} }
	file := func(path string, mode int64, content []byte) entry {
		return entry{path: path, mode: mode, content: content}
	}
	return []entry{
		dir("etc", 0o755),
		file("etc/group", 0o644, []byte(group)),
		file("etc/passwd", 0o644, []byte(passwd)),
		dir("etc/ssl", 0o755),
		dir("etc/ssl/certs", 0o755),
		file(strings.TrimPrefix(CABundlePath, "/"), 0o644, caBundle),
		dir("home", 0o755),
		{path: "home/nonroot", mode: 0o700, uid: UID, gid: GID},
		dir("tmp", 0o1777),
		dir("usr", 0o755),
		dir("usr/local", 0o755),
		dir("usr/local/bin", 0o755),
		{path: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, contentFile: binaryFile},
	}
}

// rootFSLayer writes the root filesystem as a gzip-compressed tar, every entry dated
// modTime so that the same inputs give the same bytes.
func rootFSLayer(entries []entry, modTime time.Time) ([]byte, error) {
	var out bytes.Buffer
	compressed := gzip.NewWriter(&out)
	archive := tar.NewWriter(compressed)
	for _, e := range entries {
		if err := writeEntry(archive, e, modTime); err != nil {
			return nil, fmt.Errorf("archiving /%s: %w", e.path, err)
		}
	}
	if err := archive.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer's tar: %w", err)
	}
	if err := compressed.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer's gzip stream: %w", err)
	}
	return out.Bytes(), nil
}

func writeEntry(archive *tar.Writer, e entry, modTime time.Time) error {
	header := &tar.Header{
		Name:    e.path,
		Mode:    e.mode,
		Uid:     e.uid,
		Gid:     e.gid,
		ModTime: modTime,
		Format:  tar.FormatPAX,
	}
	if e.content == nil && e.contentFile == "" {
		header.Typeflag = tar.TypeDir
		header.Name += "/"
		return archive.WriteHeader(header)
	}
	header.Typeflag = tar.TypeReg
	if e.contentFile == "" {
		header.Size = int64(len(e.content))
		if err := archive.WriteHeader(header); err != nil {
			return err
		}
		_, err := archive.Write(e.content)
		return err
	}
	f, err := os.Open(e.contentFile)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	header.Size = info.Size()
	if err := archive.WriteHeader(header); err != nil {
		return err
	}
	_, err = io.Copy(archive, f)
	return err
}
