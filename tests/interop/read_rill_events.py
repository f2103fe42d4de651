#!/usr/bin/env python3
"""read_rill_events.py [--reader=tensorboard|summary_iterator] [--events|--graph] FILE - prints
a TensorBoard event file as TensorFlow's own tools see it.

By default, the scalars: one "tag step value" line per point (value as %.9g, which round-trips a
float32). The values come from TensorBoard's EventAccumulator when tensorboard is importable
(what the TensorBoard UI shows), otherwise from tf.compat.v1.train.summary_iterator; --reader
picks one, and it is an error when that one cannot be imported. Lines are grouped by tag in the
order tags first appear; within a tag, points keep the file's order.

With --events, every event as TensorFlow's summary_iterator reads it, one line each in the
format of rill's build/bin/rill-events ("<wall_time> <step> <kind> ..."), so that the two
readers can be compared line for line.

With --graph, the graph the file holds, as TensorBoard's graph tab gets it (EventAccumulator's
Graph(), a GraphDef; summary_iterator's graph_def parsed by TensorFlow without tensorboard): one
"name op inputs device shapes" line per node, inputs comma-separated ("-" for none), device "-"
when none, shapes from the "_output_shapes" attr as TF prints them ("[2,?]"; "-" when absent).

Used by rill's interop tests to prove that files rill writes are read by TensorBoard and
TensorFlow, and that rill reads TensorFlow's files as TensorFlow does. Before reading, the
TFRecord framing is checked strictly here (both masked CRC32Cs of every record, no trailing
partial record), because TensorBoard quietly stops at a damaged record. Any read error exits
with status 1 and a message on stderr; bad usage exits with 2.
"""
import os
import struct
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def masked_crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _TABLE[(c ^ b) & 0xFF]
    c ^= 0xFFFFFFFF
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def check_framing(path):
    """Raises ValueError at the first damaged or truncated record; returns the record count."""
    with open(path, "rb") as f:
        data = f.read()
    off, count = 0, 0
    while off < len(data):
        if len(data) - off < 12:
            raise ValueError("truncated record header at byte offset %d" % off)
        (length,) = struct.unpack_from("<Q", data, off)
        (length_crc,) = struct.unpack_from("<I", data, off + 8)
        if masked_crc32c(data[off:off + 8]) != length_crc:
            raise ValueError("bad length checksum at byte offset %d" % off)
        end = off + 12 + length + 4
        if end > len(data):
            raise ValueError("truncated record at byte offset %d" % off)
        (data_crc,) = struct.unpack_from("<I", data, off + 12 + length)
        if masked_crc32c(data[off + 12:off + 12 + length]) != data_crc:
            raise ValueError("bad data checksum at byte offset %d" % off)
        off, count = end, count + 1
    return count


def scalars_tensorboard(path):
    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(path, size_guidance={ea.SCALARS: 0})
    acc.Reload()
    points = []
    for tag in acc.Tags().get(ea.SCALARS, []):
        points.extend((tag, s.step, s.value) for s in acc.Scalars(tag))
    return points


def scalars_summary_iterator(path):
    import tensorflow as tf

    points = []
    for event in tf.compat.v1.train.summary_iterator(path):
        for value in event.summary.value:
            if value.WhichOneof("value") == "simple_value":
                points.append((value.tag, event.step, value.simple_value))
    return points


def _session_log_line(log):
    name = {1: "START", 2: "STOP", 3: "CHECKPOINT"}.get(log.status, "UNSPECIFIED")
    line = "session_log " + name
    if log.status == 3 or log.checkpoint_path:
        line += " " + log.checkpoint_path
    if log.msg:
        line += " msg=" + log.msg
    return line


def events_summary_iterator(path):
    """Every event, as rill-events prints it."""
    import tensorflow as tf

    lines = []
    for event in tf.compat.v1.train.summary_iterator(path):
        what = event.WhichOneof("what")
        if what == "file_version":
            rest = "file_version " + event.file_version
        elif what == "summary":
            rest = "summary"
            for v in event.summary.value:
                kind = v.WhichOneof("value")
                if kind == "simple_value":
                    rest += " %s=%.9g" % (v.tag, v.simple_value)
                elif kind == "histo":
                    h = v.histo
                    rest += " %s=histo{num=%.9g,min=%.9g,max=%.9g,sum=%.9g}" % (
                        v.tag, h.num, h.min, h.max, h.sum)
                else:
                    rest += " %s=other" % v.tag
        elif what == "session_log":
            rest = _session_log_line(event.session_log)
        else:
            rest = "other"
        lines.append("%.6f %d %s" % (event.wall_time, event.step, rest))
    return lines


def _shape_str(sh):
    if sh.unknown_rank:
        return "<unknown>"
    return "[" + ",".join("?" if d.size < 0 else str(d.size) for d in sh.dim) + "]"


def graph_lines(path, reader):
    if reader == "summary_iterator":
        import tensorflow as tf

        gd = None
        for event in tf.compat.v1.train.summary_iterator(path):
            if event.WhichOneof("what") == "graph_def":
                gd = tf.compat.v1.GraphDef()
                gd.ParseFromString(event.graph_def)
    else:
        from tensorboard.backend.event_processing import event_accumulator as ea

        acc = ea.EventAccumulator(path, size_guidance={ea.GRAPH: 1})
        acc.Reload()
        gd = acc.Graph()
    if gd is None:
        raise ValueError("no graph in the file")
    lines = []
    for n in gd.node:
        shapes = "-"
        if "_output_shapes" in n.attr:
            shapes = ";".join(_shape_str(sh) for sh in n.attr["_output_shapes"].list.shape)
        lines.append("%s %s %s %s %s" % (n.name, n.op, ",".join(n.input) or "-",
                                         n.device or "-", shapes))
    return lines


def main(argv):
    args = argv[1:]
    reader, events, graph = None, False, False
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt == "--events":
            events = True
        elif opt == "--graph":
            graph = True
        elif opt in ("--reader=tensorboard", "--reader=summary_iterator"):
            reader = opt.split("=", 1)[1]
        else:
            args = []
            break
    if len(args) != 1:
        sys.stderr.write("usage: read_rill_events.py [--reader=tensorboard|summary_iterator] "
                         "[--events|--graph] EVENT_FILE\n")
        return 2
    path = args[0]
    try:
        records = check_framing(path)
        if events:
            for line in events_summary_iterator(path):
                print(line)
            sys.stderr.write("read_rill_events.py: %d records, read with "
                             "tf.compat.v1.train.summary_iterator\n" % records)
            return 0
        if reader is None:
            try:
                import tensorboard.backend.event_processing.event_accumulator  # noqa: F401

                reader = "tensorboard"
            except ImportError:
                reader = "summary_iterator"
        if graph:
            for line in graph_lines(path, reader):
                print(line)
            sys.stderr.write("read_rill_events.py: %d records, graph read with %s\n"
                             % (records, reader))
            return 0
        if reader == "tensorboard":
            reader = "tensorboard EventAccumulator"
            points = scalars_tensorboard(path)
        else:
            reader = "tf.compat.v1.train.summary_iterator"
            points = scalars_summary_iterator(path)
    except Exception as e:  # any read error, whatever raised it
        sys.stderr.write("read_rill_events.py: %s: %s: %s\n" % (path, type(e).__name__, e))
        return 1
    order = {}
    for tag, _, _ in points:
        order.setdefault(tag, len(order))
    points.sort(key=lambda p: order[p[0]])  # stable: file order within a tag
    sys.stderr.write("read_rill_events.py: %d records, %d scalar points, read with %s\n"
                     % (records, len(points), reader))
    for tag, step, value in points:
        print("%s %d %.9g" % (tag, step, value))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
