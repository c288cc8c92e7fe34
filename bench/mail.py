"""Mail for the offline (issue 53): the time from a reader's connect to its held mail shown, for
1 and 1,000 messages and a picture of a megabyte held by one mosquitto on loopback, beside the
broker's own floor measured in the same run: a persistent mosquitto_sub that was away while as
many QoS 1 messages were published, timed from its start to the last one received."""
import os
import statistics
import subprocess
import threading
import time

from common import make_profile, ms, record, section, spread, wait_for_broker, wait_for_line

PORT = 18850
URL = f"mqtt://127.0.0.1:{PORT}"


def shell(binary, data, env):
    """A shell on the broker alone; its status lines (to standard error in a script) with the rest."""
    return subprocess.Popen([binary, "--data-dir", data, "--no-lan", "--broker", URL], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, text=True, bufsize=1)


def sent(data, count):
    """Whether `count` messages of ours are `sent` (mailed) in the database at `data`."""
    found = subprocess.run(["sqlite3", os.path.join(data, "seance.sqlite"),
                            "SELECT count(*) FROM message WHERE outgoing = 1 AND state = 'sent'"],
                           capture_output=True, text=True).stdout.strip()
    return found == str(count)


def held_once(binary, work, env, password, tag, leave, shown, ben_writes=False):
    """Seconds from ben's going online (his status line saying he logged in) to `shown` in his
    output, after ann, with ben away, did `leave(ann, her data directory)` (False: it failed)
    and quit; None if it never was. Both are online once first, so that ann learns ben and the
    broker keeps his mailbox's session; `ben_writes`: he writes to her then (so that his seance
    takes her pictures without asking)."""
    a_dir, b_dir = os.path.join(work, f"{tag}-a"), os.path.join(work, f"{tag}-b")
    make_profile(binary, a_dir, "ann", password, env)
    make_profile(binary, b_dir, "ben", password, env)
    ben, ann = shell(binary, b_dir, env), shell(binary, a_dir, env)
    try:
        if ben_writes:
            ann.stdin.write(f"login ann --password-file {password}\nchat\n")
            ben.stdin.write(f"login ben --password-file {password}\nchat\nopen ann --wait 20\nsend me the map\n")
        else:
            ben.stdin.write(f"login ben --password-file {password}\nchat\n")
            ann.stdin.write(f"login ann --password-file {password}\nchat\nopen ben --wait 20\n")
        ann.stdin.flush()
        ben.stdin.flush()
        if (wait_for_line(ben, "#1 delivered", 20) if ben_writes else wait_for_line(ann, "ben#", 20)) is None:
            return None
        ben.stdin.write("quit\n")
        ben.stdin.close()
        ben.wait(30)
        if wait_for_line(ann, " left", 20) is None or not leave(ann, a_dir):
            return None
        ann.stdin.write("quit\n")
        ann.stdin.close()
        ann.wait(30)
        ben = shell(binary, b_dir, env)
        ben.stdin.write(f"login ben --password-file {password}\nchat\n")
        ben.stdin.flush()
        # From his login on: going online (the database, the engine, the broker's connection
        # and its handing over of what it held) is what is timed.
        start = wait_for_line(ben, "logged in as ben#", 30)
        end = wait_for_line(ben, shown, 60)
        return None if start is None or end is None else end - start
    finally:
        for proc in (ann, ben):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def messages_left(count):
    """ann writes `count` messages and waits until they are mailed."""
    def leave(ann, a_dir):
        # Her bubbles read and dropped: a full pipe would stop her.
        threading.Thread(target=lambda: ann.stdout.read(), daemon=True).start()
        ann.stdin.write("".join(f"held {i}\n" for i in range(count)))
        ann.stdin.flush()
        deadline = time.perf_counter() + 60
        while not sent(a_dir, count) and time.perf_counter() < deadline:
            time.sleep(0.05)
        return sent(a_dir, count)
    return leave


def picture_left(picture):
    """ann sends the picture at `picture` and waits until it is left with the broker."""
    def leave(ann, a_dir):
        ann.stdin.write(f"send ben {picture}\n")
        ann.stdin.flush()
        return wait_for_line(ann, "is left with the broker", 60) is not None
    return leave


def bitmap(path, width, height):
    """A 24-bit BMP of `width` x `height` (a picture every decoder here reads)."""
    import struct
    row = (width * 3 + 3) // 4 * 4
    pixels = b"".join(bytes((x * 7 + y) % 256 for x in range(width * 3)) + bytes(row - width * 3) for y in range(height))
    header = struct.pack("<2sIHHIIiiHHIIiiII", b"BM", 54 + len(pixels), 0, 0, 54, 40, width, height, 1, 24, 0, len(pixels), 2835, 2835, 0, 0)
    with open(path, "wb") as f:
        f.write(header + pixels)


def floor_once(count, tag, size=0):
    """Seconds from a persistent mosquitto_sub's start to the last of `count` QoS 1 messages
    published while it was away."""
    topic, client = f"bench/held/{tag}", f"held-{tag}"
    base = ["-h", "127.0.0.1", "-p", str(PORT), "-q", "1"]
    subprocess.run(["mosquitto_sub", *base, "-c", "-i", client, "-t", topic, "-E"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(["mosquitto_pub", *base, "-t", topic, "-l"], input="".join(f"held {i} {'x' * size}\n" for i in range(count)),
                   text=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.perf_counter()
    subprocess.run(["mosquitto_sub", *base, "-c", "-i", client, "-t", topic, "-C", str(count), "-W", "60"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def held_mail(binary, work, env, runs=3):
    section("mail: a reader's held mail, from going online to the last message shown")
    password = os.path.join(work, "password")
    conf = os.path.join(work, "mosquitto-mail.conf")
    with open(conf, "w") as f:
        f.write(f"listener {PORT} 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\nmax_queued_messages 2000\n")
    mosquitto = subprocess.Popen(["mosquitto", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_for_broker(PORT):
            print("mosquitto did not start")
            return
        for count in (1, 1000):
            times = [held_once(binary, work, env, password, f"mail-{count}-{run}", messages_left(count), f"held {count - 1}")
                     for run in range(runs)]
            floors = [floor_once(count, f"{count}-{run}") for run in range(runs)]
            if None in times:
                print(f"held {count:>5,}: the mail did not arrive in {sum(t is None for t in times)} of {runs} runs")
                continue
            seance, floor = spread(times), spread(floors)
            ratio = seance["median"] / floor["median"]
            record(f"held_mail_{count}", seance=seance, mosquitto_sub=floor, ratio=ratio)
            print(f"held {count:>5,}, seance        {ms(seance)}   from its login to the last shown")
            print(f"held {count:>5,}, mosquitto_sub {ms(floor)}   (reference: a persistent subscriber's, from its start)")
            print(f"ratio                    {ratio:8.2f} x")
        # A picture of about a megabyte: its offer and some 75 mails of chunks, 16 KiB each.
        picture = os.path.join(work, "mail-picture.bmp")
        bitmap(picture, 580, 580)
        times = [held_once(binary, work, env, password, f"mail-picture-{run}", picture_left(picture), "sent picture", ben_writes=True)
                 for run in range(runs)]
        floors = [floor_once(76, f"picture-{run}", size=16_000) for run in range(runs)]
        if None in times:
            print(f"held picture: it did not arrive in {sum(t is None for t in times)} of {runs} runs")
        else:
            seance, floor = spread(times), spread(floors)
            ratio = seance["median"] / floor["median"]
            record("held_picture", seance=seance, mosquitto_sub=floor, ratio=ratio)
            print(f"held picture, seance        {ms(seance)}   a 1.0 MB picture, from the login to it shown as arrived")
            print(f"held picture, mosquitto_sub {ms(floor)}   (reference: 76 messages of 16 KB to a persistent subscriber)")
            print(f"ratio                    {ratio:8.2f} x")
    finally:
        mosquitto.kill()
        mosquitto.wait()
