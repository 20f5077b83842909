package baremetal

// The remote scripts. Each is fixed text run as `sh -c SCRIPT NAME ARG...`, the whole argv
// quoted with QuoteArgv: every variable part (paths, names, argv of QEMU and the exporter)
// arrives as a positional parameter and is only ever expanded inside double quotes, so nothing
// a class author writes is parsed by the remote shell. They need only POSIX sh, coreutils,
// util-linux's setsid and /proc.

// Markers separate the sections of the scripts' output; log lines never start with them in
// practice, and a line that did would only shorten the quoted log.
const (
	markProc = "@@exporterset:proc "
	markLog  = "@@exporterset:log "
	markMeta = "@@exporterset:meta "
)

// aliveFn defines `alive PIDFILE`: true when the pid file names a live process that still
// leads its own process group. Checking the group (field 5 of /proc/PID/stat, after the
// parenthesised command name) guards against a recycled pid: a leader's pid is only reused by
// another group leader, which we never spawn for this directory. Zombies count as dead, for
// hosts whose init is slow to reap.
const aliveFn = `alive() {
	pid=$(cat "$1" 2>/dev/null) || return 1
	case $pid in ''|*[!0-9]*) return 1;; esac
	stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
	set -- ${stat##*) }
	[ "$1" != Z ] && [ "$3" = "$pid" ]
}
`

// prepareScript DIR META < CONFIG creates the instance directory (0700, parents too), writes
// meta.json first, so that Inventory finds even an instance whose creation was interrupted,
// then config.yaml (0600) from stdin: the config holds the exporter's token, and stdin keeps
// it out of every argv and process listing. Files are written aside and renamed, so a
// half-written one is never read.
const prepareScript = `set -eu
dir=$1
umask 077
mkdir -p -- "$dir"
chmod 0700 -- "$dir"
printf '%s\n' "$2" > "$dir/meta.json.tmp"
mv -f -- "$dir/meta.json.tmp" "$dir/meta.json"
cat > "$dir/config.yaml.tmp"
chmod 0600 -- "$dir/config.yaml.tmp"
mv -f -- "$dir/config.yaml.tmp" "$dir/config.yaml"
`

// spawnScript DIR NAME ARGV... starts ARGV detached in DIR: setsid gives it a session and
// process group of its own (the shell's background child is no group leader, so setsid does
// not fork and $! is that group's id), nohup and the redirections cut it from the SSH
// channel, so the session ends at once and the process outlives it. Output goes to NAME.log,
// the pid to NAME.pid. A missing program fails here rather than as an exited instance later.
//
// ARGV runs under a wrapper shell, the group leader NAME.pid names, that waits for it and
// writes its exit status to NAME.rc (aside, then renamed, so a half-written one is never
// read): an exporter that exits 0 after a lease is then told from one that failed. ARGV is the
// wrapper's "$@", never parsed again. The wrapper traps SIGTERM, which defers it until ARGV
// exits (POSIX: a trap waits for the foreground command), so the stop script's signal to the
// group leaves the wrapper, and `alive`, up for as long as ARGV takes to shut down; ARGV gets
// SIGTERM's default action back at exec. SIGKILL ends the wrapper too, and no status is
// recorded. A stale NAME.rc is removed first, before the new process can write its own.
const spawnScript = `set -eu
dir=$1 name=$2
shift 2
cd "$dir"
command -v "$1" >/dev/null 2>&1 || { echo "$1: command not found" >&2; exit 127; }
rm -f -- "$name.rc" "$name.rc.tmp"
wrap='trap : TERM
name=$1
shift
"$@"
echo "$?" > "$name.rc.tmp"
mv -f -- "$name.rc.tmp" "$name.rc"'
setsid nohup sh -c "$wrap" exporterset-wrap "$name" "$@" </dev/null >"$name.log" 2>&1 &
echo "$!" > "$name.pid.tmp"
mv -f -- "$name.pid.tmp" "$name.pid"
`

// statusScript DIR prints one proc line per process (running, exited:STATUS, exited when no
// status was recorded, or missing), the metadata, and the last lines of the log of each
// process that is not running. A missing directory prints nothing. NAME.rc is read only once
// the wrapper is dead, and the wrapper writes it before it exits, so it is never missed.
const statusScript = aliveFn + `dir=$1
[ -d "$dir" ] || exit 0
for p in qemu exporter; do
	if alive "$dir/$p.pid"; then s=running
	elif [ -e "$dir/$p.pid" ]; then
		s=exited
		rc=$(cat "$dir/$p.rc" 2>/dev/null) || rc=
		case $rc in ''|*[!0-9]*) ;; *) s=exited:$rc;; esac
	else s=missing; fi
	echo "` + markProc + `$p $s"
	eval "state_$p=\$s"
done
echo "` + markMeta + `$dir/meta.json"
cat "$dir/meta.json" 2>/dev/null || echo
for p in qemu exporter; do
	eval "s=\$state_$p"
	[ "$s" = running ] && continue
	echo "` + markLog + `$p"
	tail -n 20 "$dir/$p.log" 2>/dev/null || true
done
`

// stopScript DIR ends both process groups, exporter first (it holds the QMP connection):
// SIGTERM, up to five seconds' grace, SIGKILL; then removes the directory, and the set's
// directory when that was its last instance. It succeeds for a directory that is gone.
// The group is signalled as `kill -SIG -PGID`, without "--": dash's kill refuses "--", and
// with the signal given first every shell reads -PGID as a process group.
const stopScript = aliveFn + `dir=$1
[ -d "$dir" ] || exit 0
groups=
for p in exporter qemu; do
	if alive "$dir/$p.pid"; then
		pid=$(cat "$dir/$p.pid")
		kill -TERM "-$pid" 2>/dev/null || true
		groups="$groups $p"
	fi
done
i=0
while [ -n "$groups" ] && [ $i -lt 50 ]; do
	left=
	for p in $groups; do alive "$dir/$p.pid" && left="$left $p"; done
	groups=$left
	[ -n "$groups" ] && sleep 0.1
	i=$((i+1))
done
for p in $groups; do
	pid=$(cat "$dir/$p.pid")
	kill -KILL "-$pid" 2>/dev/null || true
done
rm -rf -- "$dir"
rmdir -- "${dir%/*}" 2>/dev/null || true
`

// inventoryScript ROOT prints, for every ROOT/NS_SET/INSTANCE/meta.json, a meta marker with
// its path and its content. ROOT is expanded quoted, so glob characters in it are literal.
const inventoryScript = `root=$1
for m in "$root"/*/*/meta.json; do
	[ -f "$m" ] || continue
	echo "` + markMeta + `$m"
	cat "$m"
	echo
done
`
