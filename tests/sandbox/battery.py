"""The hostile battery: every command of issue 41's items 1 to 4 aimed at what the
sandbox guards, and the tricks the path rules already caught. ``{OUT}`` is a folder
outside the workspace, ``{HOME}`` the home folder, ``{OUTSIDE}`` the URL of a server the
policy does not allow, ``{OUTSIDE_PORT}`` its port."""

from __future__ import annotations

# Item 1: programs that run a command string (aimed at a file outside the workspace).
RUNS_A_COMMAND = [
    "git -c alias.x='!rm {OUT}/f' x",
    "tar xf t.tar --to-command='rm {OUT}/f'",
    "awk 'BEGIN{{system(\"rm {OUT}/f\")}}'",
    "sed 's|.*|rm {OUT}/f|e' f",
    "sed '1e rm {OUT}/f' f",
    "flock L rm {OUT}/f",
    "script -qc 'rm {OUT}/f' /dev/null",
    "runuser -u root -- rm {OUT}/f",
    "chroot / rm {OUT}/f",
    "systemd-run rm {OUT}/f",
    "cp /bin/rm ./del && ./del {OUT}/f",
    "ln -sf /bin/rm ./lnk && ./lnk {OUT}/keep.txt",
]

# Item 2: "read-only" programs that write a file (outside the workspace) or run one.
WRITES_A_FILE = [
    "sed -n '1e touch {OUT}/X1' f",
    "sed 'w {OUT}/X2' f",
    "awk '{{print > \"{OUT}/X3\"}}' f",
    "tar --checkpoint=1 --checkpoint-action=exec='touch {OUT}/X4' -cf a.tar f",
    "tar -I 'touch {OUT}/X5;gzip' -cf b.tgz f",
    "git -c core.fsmonitor='touch {OUT}/X6' status",
    "git log --output={OUT}/X7",
    "find . -maxdepth 1 -fprintf {OUT}/X8 x",
    "sort -o {OUT}/X9 f",
    "flock {OUT}/lk touch {OUT}/X10",
    "echo hi > {OUT}/X11",
    "cp f {HOME}/.bashrc",
    "touch {HOME}/.profile {OUT}/../new-file",
]

# Items 3 and 4: the denied files read by other names and by other programs.
READS_A_SECRET = [
    "cat .env",
    "cat env-copy",
    "grep -r OPENAI .",
    "cat secrets/key",
    "ln .env again && cat again",
    "ln -s .env sym && cat sym",
    "cat ./sub/../.env",
    "cat $PWD/.env",
    "cat /proc/self/root$PWD/.env",
    "cp .env {OUT}/x && cat {OUT}/x",  # not /tmp: the unsandboxed control would leave it
    "python3 -c 'print(open(\".env\").read())'",
    "cat {HOME}/.ssh/id_rsa",
    "cat {HOME}/.local/share/harnessc/projects/p/session.jsonl",
    "mv secrets moved",
    "cat moved/key",
    "mv conf moved-conf",  # the folder holding a denied file moves (its mount point along)
    "cat moved-conf/secret.key",  # ... and is read in the next process under its new name
    "mv .env e2; cat e2",
]

# The network: nothing but the allowed host, whatever the program does.
CONNECTS_OUT = [
    "curl -s --max-time 5 {OUTSIDE}",
    "curl -s --max-time 5 --noproxy '*' {OUTSIDE}",
    "python3 -c 'import urllib.request as u; print(u.urlopen(\"{OUTSIDE}\", timeout=5).read())'",
    "exec 3<>/dev/tcp/127.0.0.1/{OUTSIDE_PORT} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3",
    "env -u HTTP_PROXY -u http_proxy curl -s --max-time 5 {OUTSIDE}",
    "getent hosts example.com",
]

BATTERY = [*RUNS_A_COMMAND, *WRITES_A_FILE, *READS_A_SECRET, *CONNECTS_OUT, "rm -rf {OUT}"]


def commands(out: str, home: str, outside_url: str, outside_port: int) -> list[str]:
    return [
        c.format(OUT=out, HOME=home, OUTSIDE=outside_url, OUTSIDE_PORT=outside_port)
        for c in BATTERY
    ]
