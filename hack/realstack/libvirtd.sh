#!/usr/bin/env bash
# Starts and stops the two libvirtd instances the real-stack tier migrates
# between, without systemd:
#   A  the normal qemu:///system (virtlogd + libvirtd, stock /etc/libvirt),
#      also listening on qemu+tcp://127.0.0.1:16509/system with auth none,
#   B  a second libvirtd in a private mount namespace with its own
#      /run/libvirt, /var/{lib,cache,log}/libvirt and /etc/libvirt (scratch
#      directories under build/realstack/b), its own host UUID, listening on
#      qemu+tcp://127.0.0.1:16510/system with auth none.
# libvirt refuses to migrate a domain to the host it runs on (same host UUID);
# two daemons with distinct UUIDs on one machine make real live migration
# A -> B and B -> A possible (migrate URI tcp://127.0.0.1[:PORT]).
#
# Migration TLS: start also makes a CA and server/client certificates
# (openssl, IP SAN 127.0.0.1) under build/realstack/pki/qemu. B's qemu.conf
# points migrate_tls_x509_cert_dir there; A (stock /etc/libvirt) reads the
# default /etc/pki/qemu, which gets a copy unless it exists and is not ours.
# Migrations with VIR_MIGRATE_TLS (virtkit's default) then work A <-> B.
#
# Usage: libvirtd.sh start|stop|status   (as root)
# start is idempotent: a running, answering instance is left alone.
# State (pids, logs, B's scratch tree) lives in build/realstack/.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
state=${REALSTACK_STATE:-$root/build/realstack}

uri_a=qemu:///system
# A also listens on TCP so B can migrate guests back to it (B's own
# qemu:///system is B itself, in its mount namespace).
port_a=${REALSTACK_A_PORT:-16509}
uri_a_tcp=qemu+tcp://127.0.0.1:$port_a/system
port_b=${REALSTACK_B_PORT:-16510}
uri_b=qemu+tcp://127.0.0.1:$port_b/system
# Where B's QEMU listens for incoming migrations when the caller's migrate
# URI names no port (A keeps libvirt's default 49152-49215).
migration_min_b=49400
migration_max_b=49463
timeout=${REALSTACK_TIMEOUT:-90}

pki=$state/pki/qemu
# Marks a certificate directory these scripts own (and may refresh).
pki_marker=.virtkit-realstack

die() {
	echo "libvirtd.sh: $*" >&2
	exit 1
}

pid_alive() {
	local f=$1
	[[ -s $f ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

answers() {
	timeout 30 virsh -q -c "$1" version >/dev/null 2>&1
}

wait_answer() {
	local uri=$1 pidfile=$2 log=$3 deadline=$((SECONDS + timeout))
	until answers "$uri"; do
		if ! pid_alive "$pidfile"; then
			echo "libvirtd.sh: daemon for $uri died; last log lines:" >&2
			tail -n 30 "$log" >&2 2>/dev/null || true
			exit 1
		fi
		((SECONDS < deadline)) || die "$uri did not answer within ${timeout}s (log: $log)"
		sleep 0.5
	done
}

# make_pki creates the migration TLS certificates once: a CA, a server
# certificate for 127.0.0.1/localhost (the destination QEMU) and a client
# certificate (the source QEMU; libvirt verifies peers by default). QEMU runs
# as libvirt-qemu and reads them itself.
make_pki() {
	if [[ -s $pki/client-cert.pem ]]; then
		return
	fi
	command -v openssl >/dev/null || die "openssl missing; run hack/realstack/install.sh"
	local work
	work=$(mktemp -d)
	openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=virtkit realstack CA" \
		-keyout "$work/ca-key.pem" -out "$work/ca-cert.pem" 2>/dev/null
	local role
	for role in server client; do
		openssl req -newkey rsa:2048 -nodes -subj "/CN=virtkit-realstack-$role" \
			-keyout "$work/$role-key.pem" -out "$work/$role.csr" 2>/dev/null
		printf '%s\n' "basicConstraints = CA:FALSE" \
			"keyUsage = digitalSignature, keyEncipherment" \
			"extendedKeyUsage = serverAuth, clientAuth" \
			"subjectAltName = IP:127.0.0.1, DNS:localhost, DNS:$(hostname)" >"$work/$role.ext"
		openssl x509 -req -days 3650 -in "$work/$role.csr" -CA "$work/ca-cert.pem" -CAkey "$work/ca-key.pem" \
			-CAcreateserial -extfile "$work/$role.ext" -out "$work/$role-cert.pem" 2>/dev/null
	done
	mkdir -p "$pki"
	install -m 0644 "$work/ca-cert.pem" "$work/server-cert.pem" "$work/client-cert.pem" "$pki/"
	install -m 0640 -g libvirt-qemu "$work/server-key.pem" "$work/client-key.pem" "$pki/"
	touch "$pki/$pki_marker"
	rm -rf "$work"
	echo "libvirtd.sh: migration TLS certificates in $pki"
}

# install_pki_a gives A (stock config: /etc/pki/qemu) the certificates,
# unless that directory exists and was not made here.
install_pki_a() {
	local dir=/etc/pki/qemu
	if [[ -d $dir && ! -e $dir/$pki_marker ]]; then
		echo "libvirtd.sh: $dir exists and is not ours; A migrates with its certificates" >&2
		return
	fi
	mkdir -p "$dir"
	chmod 755 /etc/pki "$dir"
	cp -p "$pki"/*.pem "$dir/"
	touch "$dir/$pki_marker"
}

start_a() {
	mkdir -p "$state/a"
	if pid_alive /run/libvirtd.pid && answers "$uri_a" && answers "$uri_a_tcp"; then
		echo "libvirtd.sh: A ($uri_a, $uri_a_tcp) already running"
		return
	fi
	if pid_alive /run/libvirtd.pid && ! answers "$uri_a_tcp"; then
		# Started without the TCP listener (by hand or an older script):
		# restart it. Running guests survive a libvirtd restart (QEMU keeps
		# running; libvirtd reconnects to it).
		kill "$(cat /run/libvirtd.pid)"
		for _ in $(seq 1 50); do pid_alive /run/libvirtd.pid || break; sleep 0.2; done
	fi
	if ! pid_alive /run/virtlogd.pid; then
		/usr/sbin/virtlogd -d
	fi
	if ! pid_alive /run/libvirtd.pid; then
		# Stock settings plus a log file the tests can point at.
		cat /etc/libvirt/libvirtd.conf >"$state/a/libvirtd.conf"
		cat >>"$state/a/libvirtd.conf" <<EOF

# added by hack/realstack/libvirtd.sh
log_outputs = "3:file:$state/a/libvirtd.log"
listen_tls = 0
listen_tcp = 1
listen_addr = "127.0.0.1"
tcp_port = "$port_a"
auth_tcp = "none"
EOF
		/usr/sbin/libvirtd -d --listen --config "$state/a/libvirtd.conf"
	fi
	wait_answer "$uri_a" /run/libvirtd.pid "$state/a/libvirtd.log"
	wait_answer "$uri_a_tcp" /run/libvirtd.pid "$state/a/libvirtd.log"
	echo "libvirtd.sh: A answers on $uri_a and $uri_a_tcp"
}

seed_b() {
	local b=$state/b
	mkdir -p "$b"/{run,lib,cache,log}
	if [[ ! -f $b/etc/.seeded ]]; then
		rm -rf "$b/etc"
		mkdir -p "$b/etc"
		cp -a /etc/libvirt/. "$b/etc/"
		# B shares the host's network namespace: never bring up a second
		# default network (virbr0) there; drop A's persistent domains too.
		rm -f "$b"/etc/qemu/networks/autostart/*.xml "$b"/etc/qemu/*.xml
		rm -rf "$b"/etc/qemu/autostart
		touch "$b/etc/.seeded"
	fi
	if [[ ! -s $b/host-uuid ]]; then
		cat /proc/sys/kernel/random/uuid >"$b/host-uuid"
	fi
	cat >"$b/etc/libvirtd.conf" <<EOF
# generated by hack/realstack/libvirtd.sh: instance B
listen_tls = 0
listen_tcp = 1
listen_addr = "127.0.0.1"
tcp_port = "$port_b"
auth_tcp = "none"
host_uuid = "$(cat "$b/host-uuid")"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
EOF
	cat >"$b/etc/qemu.conf" <<EOF
# generated by hack/realstack/libvirtd.sh: instance B
# No virtlogd inside B's namespace: QEMU writes its log file directly.
stdio_handler = "file"
# A already owns the machine cgroups; B creates none.
cgroup_controllers = [ ]
# Migration TLS with this script's certificates (A uses /etc/pki/qemu).
migrate_tls_x509_cert_dir = "$pki"
migration_port_min = $migration_min_b
migration_port_max = $migration_max_b
EOF
}

start_b() {
	local b=$state/b
	if pid_alive "$state/b.pid" && answers "$uri_b"; then
		echo "libvirtd.sh: B ($uri_b) already running"
		return
	fi
	if pid_alive "$state/b.pid"; then
		wait_answer "$uri_b" "$state/b.pid" "$b/log/libvirtd.log"
		echo "libvirtd.sh: B answers on $uri_b"
		return
	fi
	seed_b
	mkdir -p /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt
	unshare -m --propagation private /bin/bash -euo pipefail -c '
		b=$1 pidfile=$2
		mount --make-rprivate /
		mount --bind "$b/run" /run/libvirt
		mount --bind "$b/lib" /var/lib/libvirt
		mount --bind "$b/cache" /var/cache/libvirt
		mount --bind "$b/log" /var/log/libvirt
		mount --bind "$b/etc" /etc/libvirt
		mkdir -p /var/lib/libvirt/qemu/channel/target /var/lib/libvirt/qemu/ram \
			/var/lib/libvirt/qemu/nvram /var/lib/libvirt/qemu/save \
			/var/lib/libvirt/qemu/snapshot /var/lib/libvirt/qemu/dump \
			/var/lib/libvirt/qemu/checkpoint /var/lib/libvirt/boot \
			/var/lib/libvirt/images /var/cache/libvirt/qemu /var/log/libvirt/qemu \
			/run/libvirt/qemu
		chown -R libvirt-qemu:libvirt-qemu /var/lib/libvirt/qemu
		chmod 751 /var/lib/libvirt/qemu
		exec /usr/sbin/libvirtd -d --listen --pid-file "$pidfile"
	' bash "$b" "$state/b.pid"
	wait_answer "$uri_b" "$state/b.pid" "$b/log/libvirtd.log"
	echo "libvirtd.sh: B answers on $uri_b"
}

destroy_all() {
	local uri=$1 d
	answers "$uri" || return 0
	for d in $(timeout 30 virsh -q -c "$uri" list --name 2>/dev/null); do
		timeout 30 virsh -q -c "$uri" destroy "$d" >/dev/null 2>&1 || true
	done
}

kill_pidfile() {
	local f=$1 i
	pid_alive "$f" || { rm -f "$f"; return 0; }
	local pid
	pid=$(cat "$f")
	kill "$pid" 2>/dev/null || true
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$f"
}

# QEMU processes outlive their libvirtd: end the ones a daemon recorded.
kill_qemus() {
	local dir=$1 f
	for f in "$dir"/*.pid; do
		[[ -e $f ]] || continue
		if [[ $(cat "/proc/$(cat "$f")/comm" 2>/dev/null) == qemu-system-* ]]; then
			kill_pidfile "$f"
		fi
	done
}

stop() {
	destroy_all "$uri_b"
	destroy_all "$uri_a"
	kill_pidfile "$state/b.pid"
	kill_qemus "$state/b/run/qemu"
	kill_pidfile /run/libvirtd.pid
	kill_qemus /run/libvirt/qemu
	kill_pidfile /run/virtlogd.pid
	# B's runtime state goes; its config, UUID and logs stay for inspection.
	rm -rf "$state/b/run" "$state/b/lib" "$state/b/cache"
	echo "libvirtd.sh: stopped"
}

status() {
	local rc=0
	if answers "$uri_a"; then echo "A $uri_a: running (pid $(cat /run/libvirtd.pid 2>/dev/null))"; else echo "A $uri_a: not answering"; rc=1; fi
	if answers "$uri_b"; then echo "B $uri_b: running (pid $(cat "$state/b.pid" 2>/dev/null))"; else echo "B $uri_b: not answering"; rc=1; fi
	return $rc
}

[[ $(id -u) -eq 0 ]] || die "must run as root"
for tool in virsh unshare /usr/sbin/libvirtd /usr/sbin/virtlogd; do
	command -v "$tool" >/dev/null || die "$tool missing; run hack/realstack/install.sh"
done
mkdir -p "$state"

case ${1:-} in
start)
	make_pki
	install_pki_a
	start_a
	start_b
	;;
stop) stop ;;
status) status ;;
*) die "usage: $0 start|stop|status" ;;
esac
