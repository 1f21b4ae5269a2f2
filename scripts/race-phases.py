#!/usr/bin/env python3
"""Phases of each restart of a restart race run with -PkeepLogs, from the children's logs.

Usage: python3 scripts/race-phases.py <kept directory>...  (the "kept (logs of every run)" path
the race prints; several directories are pooled). For each variant, the medians over its
restarts (the load run excluded), in ms:

  startup           KafkaStreams#start(): Kafka's start-up path, which opens every local store
  join              stream thread started -> partitions assigned
  assigned_running  partitions assigned -> the client is RUNNING
  stinit            total of the "in N ms" of the stores the stream thread initialised
  lastinit          partitions assigned -> the last of those initialisations
  main              JVM start -> EosApp's main() entered (the JVM's own start-up)
  build             main() -> topology built (config, the StreamsBuilder, builder.build())
  construct         topology built -> new KafkaStreams(...) returned
  cpu_started       CPU ms of the whole process when start() returned
  cpu_running       CPU ms of the whole process at RUNNING
"""
import glob
import os
import re
import statistics
import sys


def millis(line):
    m = re.match(r'(\d\d):(\d\d):(\d\d)\.(\d\d\d) ', line)
    if not m:
        return None
    h, mi, s, ms = map(int, m.groups())
    return ((h * 60 + mi) * 60 + s) * 1000 + ms


def phases(path):
    start = threads = assigned = running = last_init = None
    init_total = 0
    ms = {}
    with open(path, errors='replace') as f:
        for line in f:
            ts = millis(line)
            if ts is None:
                continue
            if 'stream-client' in line and 'from CREATED to REBALANCING' in line:
                start = ts
            if 'StreamThread-1' in line and 'from CREATED to STARTING' in line:
                threads = ts
            if 'StreamThread-1' in line and 'to PARTITIONS_ASSIGNED' in line and assigned is None:
                assigned = ts
            if 'stream-client' in line and 'to RUNNING' in line and running is None:
                running = ts
            m = re.search(r'EosApp milestone (\w+) at=(\d+) cpu=(-?\d+)', line)
            if m:
                ms[m.group(1)] = (int(m.group(2)), int(m.group(3)))
            m = re.search(r'kstate (?:\w+ )?store \S+ \(task \S+\): (?:opened|adopted) .* in (\d+) ms', line)
            if m and 'StreamThread' in line.split(' ')[2]:
                init_total += int(m.group(1))
                last_init = ts
    if None in (start, threads, assigned, running):
        return None
    row = {'startup': threads - start, 'join': assigned - threads, 'assigned_running': running - assigned,
           'stinit': init_total, 'lastinit': (last_init - assigned) if last_init else 0}
    if all(k in ms for k in ('main', 'built', 'constructed', 'started', 'running')):
        row.update({'main': ms['main'][0], 'build': ms['built'][0] - ms['main'][0],
                    'construct': ms['constructed'][0] - ms['built'][0],
                    'cpu_started': ms['started'][1], 'cpu_running': ms['running'][1]})
    return row


def main():
    by_variant = {}
    for d in sys.argv[1:]:
        for path in glob.glob(os.path.join(d, '*-logs', '*.stderr.log')):
            name = os.path.basename(path)
            m = re.match(r'(.+)-(\d+)\.stderr\.log$', name)
            if not m:
                continue  # the load run
            p = phases(path)
            if p:
                by_variant.setdefault(m.group(1), []).append(p)
    for variant, rows in sorted(by_variant.items()):
        keys = [k for k in rows[0] if all(k in r for r in rows)]
        med = {k: statistics.median(r[k] for r in rows) for k in keys}
        print(variant, len(rows), 'restarts, medians:', ' '.join('%s=%d' % (k, v) for k, v in med.items()))


if __name__ == '__main__':
    main()
