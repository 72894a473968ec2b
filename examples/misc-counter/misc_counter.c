// SPDX-License-Identifier: GPL-2.0
/*
 * misc_counter: a small virtual driver bundled with autodriver as the example
 * for `autodriver check`. It registers /dev/misc_counter; every read returns
 * the number of opens so far. No hardware needed, so it loads in any guest.
 */
#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

static atomic_t opens = ATOMIC_INIT(0);

static int counter_open(struct inode *inode, struct file *file)
{
	atomic_inc(&opens);
	return 0;
}

static ssize_t counter_read(struct file *file, char __user *buf, size_t len,
			    loff_t *ppos)
{
	char tmp[24];
	int n = scnprintf(tmp, sizeof(tmp), "%d\n", atomic_read(&opens));

	return simple_read_from_buffer(buf, len, ppos, tmp, n);
}

static const struct file_operations counter_fops = {
	.owner = THIS_MODULE,
	.open = counter_open,
	.read = counter_read,
};

static struct miscdevice counter_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "misc_counter",
	.fops = &counter_fops,
};

static int __init counter_init(void)
{
	int ret = misc_register(&counter_dev);

	if (ret)
		return ret;
	pr_info("misc_counter: registered\n");
	return 0;
}

static void __exit counter_exit(void)
{
	misc_deregister(&counter_dev);
}

module_init(counter_init);
module_exit(counter_exit);
MODULE_DESCRIPTION("Example virtual driver for autodriver");
MODULE_LICENSE("GPL");
