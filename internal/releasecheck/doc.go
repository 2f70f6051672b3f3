// Package releasecheck holds the tests that check kdupcap's release as a user
// gets it: what `make release-snapshot` builds (.goreleaser.yaml), the deb
// and rpm packages' contents and systemd unit (packaging/), the container
// image definition (Dockerfile) and the Kubernetes DaemonSet
// (deploy/kubernetes/daemonset.yaml). It has no code of its own.
//
// # Place in the flow
//
// It sits beside the flow (capture -> decode -> detect -> profile -> report
// -> pipeline -> cmd/kdupcap) and judges the module from outside, by the
// files a release is made of and the binaries goreleaser builds, never by
// its code: it imports only the standard library and internal/testenv, and
// must never import capture, decode, detect, profile, report, pipeline or
// cmd/kdupcap.
//
// # What it takes and gives
//
// It takes the repository's files, from the module root (../..), and the
// programs goreleaser, make and git (TestSnapshot), dpkg-deb (the deb's
// listing) and Debian's /usr/bin/python3 with PyYAML, python3-yaml
// (TestDaemonSet); .ci/run installs them. TestSnapshot runs `goreleaser
// release --snapshot --clean --skip=publish` with the repository's
// configuration into a temporary dist directory, then checks every
// archive's members, checksums.txt, that the Linux binaries are static and
// that the host's one runs `version` with the snapshot's version, and each
// deb's and rpm's kind and the deb's files, conffiles and maintainer
// scripts. The others read the unit, the DaemonSet and the Dockerfile for
// the privileges they grant: CAP_NET_RAW and CAP_NET_ADMIN, nothing more,
// never root.
//
// # Bad input and bounds
//
// A missing program skips on a developer's machine and fails under CI
// (internal/testenv). goreleaser writes only into its temporary dist
// directory and, through its before hook (make release-files), ./kdupcap,
// man/ and build/ of the working tree, which git ignores; it runs at most 10
// minutes. A warm build cache makes it some 30 seconds; a cold one compiles
// the module and its dependencies for six targets (minutes on two cores).
//
// # Files
//
//   - release_test.go: TestSnapshot, the archives, checksums, binaries and
//     packages of a snapshot release.
//   - deploy_test.go: TestServiceUnit, TestDaemonSet and TestDockerfile, the
//     privileges of the systemd unit, the DaemonSet and the image.
package releasecheck
