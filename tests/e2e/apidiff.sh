# apidiff on real drivers from linux-source-6.1 against the real 6.1 and 6.12 Debian headers:
# drivetemp (class_interface add_dev/remove_dev lost a parameter), sht4x (i2c_driver.probe type
# changed), and a small file written here that uses ethtool_ops get_rxfh and class_create.
. "$(dirname "$0")/lib.sh.inc"
need_kernel 6.1
need_kernel 6.12
SRC=$("$AD" kernel source 6.1) || fail "kernel source 6.1"
D="$WORK/drv"
mkdir -p "$D"
cp "$SRC/drivers/hwmon/drivetemp.c" "$SRC/drivers/hwmon/sht4x.c" "$D/"
cat > "$D/rss.c" <<'CEOF'
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/ethtool.h>
#include <linux/device.h>
static int rss_get_rxfh(struct net_device *dev, u32 *indir, u8 *key, u8 *hfunc) { return 0; }
static const struct ethtool_ops rss_ops = { .get_rxfh = rss_get_rxfh };
static struct class *rss_class;
static int __init rss_init(void)
{
	rss_class = class_create(THIS_MODULE, "rss");
	return rss_ops.get_rxfh ? 0 : PTR_ERR_OR_ZERO(rss_class);
}
module_init(rss_init);
MODULE_LICENSE("GPL");
CEOF
printf 'obj-m += drivetemp.o sht4x.o rss.o\n' > "$D/Makefile"
before=$(ls -A "$D" | sort)

start=$(date +%s)
"$AD" apidiff "$D" --from 6.1 --to 6.12 --json > "$WORK/out.json" || fail "apidiff exited $?"
echo "apidiff took $(( $(date +%s) - start )) s"
[ "$(ls -A "$D" | sort)" = "$before" ] || fail "apidiff wrote into the driver tree"

J="$WORK/out.json"
py "$J" "d['schema'] == 'autodriver.apidiff' and d['schema_version'] == 1"
py "$J" "sorted(f['file'] for f in d['files']) == ['drivetemp.c', 'rss.c', 'sht4x.c']" "three files parsed"
py "$J" "all(f['from']['declarations'] > 1000 and f['to']['declarations'] > 1000 for f in d['files'])" "real headers read"
py "$J" "all(isinstance(f[k]['parse_errors'], int) for f in d['files'] for k in ('from', 'to'))"
py "$J" "all('-nostdinc' in f['to']['clang_args'] and not any(a.startswith('-mindirect-branch') for a in f['to']['clang_args']) for f in d['files'])" "kbuild flags converted"
ch() { echo "[c for f in d['files'] if f['file'] == '$1' for c in f['changes']]"; }
# drivetemp: class_interface callbacks lost their second parameter (real 6.1 -> 6.12 change).
py "$J" "any(c['symbol'] == 'struct class_interface' and c['member'] == 'add_dev' and c['kind'] == 'callback-type-changed' and c['from'] == 'int (*)(struct device *, struct class_interface *)' and c['to'] == 'int (*)(struct device *)' and c['header_to'] == 'linux/device/class.h' for c in $(ch drivetemp.c))" "drivetemp add_dev"
py "$J" "any(c['symbol'] == 'struct class_interface' and c['member'] == 'remove_dev' and c['kind'] == 'callback-type-changed' for c in $(ch drivetemp.c))" "drivetemp remove_dev"
# sht4x: i2c_driver.probe lost the i2c_device_id parameter.
py "$J" "any(c['symbol'] == 'struct i2c_driver' and c['member'] == 'probe' and c['kind'] == 'callback-type-changed' and 'i2c_device_id' in c['from'] and 'i2c_device_id' not in c['to'] for c in $(ch sht4x.c))" "sht4x probe"
# rss.c: ethtool_ops get_rxfh takes struct ethtool_rxfh_param; class_create 2-arg macro -> 1-arg function.
py "$J" "any(c['symbol'] == 'struct ethtool_ops' and c['member'] == 'get_rxfh' and c['kind'] == 'callback-type-changed' and 'ethtool_rxfh_param' in c['to'] for c in $(ch rss.c))" "get_rxfh"
py "$J" "any(c['symbol'] == 'class_create' and c['kind'] == 'args-removed' and c['from'].startswith('#define class_create(') and 'const char *' in c['to'] for c in $(ch rss.c))" "class_create"
# Names that did not change are not reported (a test that can fail both ways).
# 6.12's kzalloc is a variadic macro: every 6.1 call still fits, so no argument change.
py "$J" "not any(c['symbol'] == 'kzalloc' and c['kind'] in ('args-added', 'args-removed') for c in d['changes'])" "kzalloc(...)"
# struct mutex moved to linux/mutex_types.h, which linux/mutex.h includes: not a change for the driver.
py "$J" "not any(c['symbol'] == 'struct mutex' for c in d['changes'])" "covered move"
py "$J" "not any(c['symbol'] in ('module_init', 'i2c_smbus_read_byte_data', 'hwmon_device_register_with_info') for c in d['changes'])" "no noise on unchanged APIs"

rc=0; "$AD" apidiff "$WORK/nope" --json > /dev/null 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] || fail "missing dir: expected exit 2, got $rc"
[ "$(wc -l < "$WORK/err")" -eq 1 ] || fail "missing dir: expected one error line"
rc=0; "$AD" apidiff "$D" --to 9.9 > /dev/null 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] || fail "bad --to: expected exit 2, got $rc"
mkdir -p "$WORK/empty"
rc=0; "$AD" apidiff "$WORK/empty" > /dev/null 2> "$WORK/err" || rc=$?
[ $rc -eq 2 ] || fail "no Makefile: expected exit 2, got $rc"
echo PASS
