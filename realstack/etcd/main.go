// Command etcd is the etcd server, for tests only.
//
// The etcd program's own main package lives in a module (go.etcd.io/etcd/v3)
// that is not needed here; etcdmain is the whole program, so this is the
// same binary built from go.etcd.io/etcd/server/v3 alone.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
