#include "autodriver/propose/legacy_api.hpp"

namespace autodriver::propose {

namespace {

// include/linux/pci-dma-compat.h, removed in Linux 5.18 when the last in-tree users had moved
// to the DMA API ("pci_* DMA wrappers are deprecated"): each wrapper is one DMA API call on
// &pdev->dev. The PCI_DMA_* direction names were plain aliases of the DMA_* ones.
constexpr std::string_view k_pci_dma_compat = R"(
#define PCI_DMA_BIDIRECTIONAL	DMA_BIDIRECTIONAL
#define PCI_DMA_TODEVICE	DMA_TO_DEVICE
#define PCI_DMA_FROMDEVICE	DMA_FROM_DEVICE
#define PCI_DMA_NONE		DMA_NONE

static inline void *
pci_alloc_consistent(struct pci_dev *hwdev, size_t size,
		     dma_addr_t *dma_handle)
{
	return dma_alloc_coherent(&hwdev->dev, size, dma_handle, GFP_ATOMIC);
}

static inline void *
pci_zalloc_consistent(struct pci_dev *hwdev, size_t size,
		      dma_addr_t *dma_handle)
{
	return dma_alloc_coherent(&hwdev->dev, size, dma_handle, GFP_ATOMIC);
}

static inline void
pci_free_consistent(struct pci_dev *hwdev, size_t size,
		    void *vaddr, dma_addr_t dma_handle)
{
	dma_free_coherent(&hwdev->dev, size, vaddr, dma_handle);
}

static inline dma_addr_t
pci_map_single(struct pci_dev *hwdev, void *ptr, size_t size, int direction)
{
	return dma_map_single(&hwdev->dev, ptr, size, (enum dma_data_direction)direction);
}

static inline void
pci_unmap_single(struct pci_dev *hwdev, dma_addr_t dma_addr,
		 size_t size, int direction)
{
	dma_unmap_single(&hwdev->dev, dma_addr, size, (enum dma_data_direction)direction);
}

static inline dma_addr_t
pci_map_page(struct pci_dev *hwdev, struct page *page,
	     unsigned long offset, size_t size, int direction)
{
	return dma_map_page(&hwdev->dev, page, offset, size, (enum dma_data_direction)direction);
}

static inline void
pci_unmap_page(struct pci_dev *hwdev, dma_addr_t dma_address,
	       size_t size, int direction)
{
	dma_unmap_page(&hwdev->dev, dma_address, size, (enum dma_data_direction)direction);
}

static inline int
pci_map_sg(struct pci_dev *hwdev, struct scatterlist *sg,
	   int nents, int direction)
{
	return dma_map_sg(&hwdev->dev, sg, nents, (enum dma_data_direction)direction);
}

static inline void
pci_unmap_sg(struct pci_dev *hwdev, struct scatterlist *sg,
	     int nents, int direction)
{
	dma_unmap_sg(&hwdev->dev, sg, nents, (enum dma_data_direction)direction);
}

static inline void
pci_dma_sync_single_for_cpu(struct pci_dev *hwdev, dma_addr_t dma_handle,
		    size_t size, int direction)
{
	dma_sync_single_for_cpu(&hwdev->dev, dma_handle, size, (enum dma_data_direction)direction);
}

static inline void
pci_dma_sync_single_for_device(struct pci_dev *hwdev, dma_addr_t dma_handle,
		    size_t size, int direction)
{
	dma_sync_single_for_device(&hwdev->dev, dma_handle, size, (enum dma_data_direction)direction);
}

static inline void
pci_dma_sync_sg_for_cpu(struct pci_dev *hwdev, struct scatterlist *sg,
		int nelems, int direction)
{
	dma_sync_sg_for_cpu(&hwdev->dev, sg, nelems, (enum dma_data_direction)direction);
}

static inline void
pci_dma_sync_sg_for_device(struct pci_dev *hwdev, struct scatterlist *sg,
		int nelems, int direction)
{
	dma_sync_sg_for_device(&hwdev->dev, sg, nelems, (enum dma_data_direction)direction);
}

static inline int pci_dma_mapping_error(struct pci_dev *pdev, dma_addr_t dma_addr)
{
	return dma_mapping_error(&pdev->dev, dma_addr);
}

static inline int pci_set_dma_mask(struct pci_dev *dev, u64 mask)
{
	return dma_set_mask(&dev->dev, mask);
}

static inline int pci_set_consistent_dma_mask(struct pci_dev *dev, u64 mask)
{
	return dma_set_coherent_mask(&dev->dev, mask);
}
)";

// include/linux/semaphore.h up to 2.6.36: the semaphore "mutex" helpers, renamed when the
// mutex API took the name (2.6.37: DECLARE_MUTEX -> DEFINE_SEMAPHORE, a semaphore of count 1).
constexpr std::string_view k_semaphore = R"(
#define DECLARE_MUTEX(name)	DEFINE_SEMAPHORE(name)

static inline void init_MUTEX(struct semaphore *sem)
{
	sema_init(sem, 1);
}

static inline void init_MUTEX_LOCKED(struct semaphore *sem)
{
	sema_init(sem, 0);
}
)";

// include/media/v4l2-dev.h up to 5.6: the video device type VFL_TYPE_GRABBER, renamed
// VFL_TYPE_VIDEO in 5.7 ("media: v4l2-dev: rename VFL_TYPE_GRABBER to _VIDEO") without keeping
// the old name; stated as the alias that rename amounts to.
constexpr std::string_view k_v4l2_dev = R"(
#define VFL_TYPE_GRABBER	VFL_TYPE_VIDEO
)";

// include/linux/time32.h and timekeeping32.h up to 5.5: the y2038 work removed struct timespec
// and ktime_get_ts() from kernel-internal use in 5.6; kernel code moved to struct timespec64
// and ktime_get_ts64() (same layout on 64-bit). Stated as the aliases that move amounts to.
constexpr std::string_view k_time32 = R"(
#define timespec	timespec64
#define ktime_get_ts	ktime_get_ts64
)";

} // namespace

const std::vector<LegacyHeader>& legacy_headers() {
  static const std::vector<LegacyHeader> k_headers = {
      {"linux<=5.17:include/linux/pci-dma-compat.h", k_pci_dma_compat},
      {"linux<=2.6.36:include/linux/semaphore.h", k_semaphore},
      {"linux<=5.6:include/media/v4l2-dev.h", k_v4l2_dev},
      {"linux<=5.5:include/linux/time32.h", k_time32},
  };
  return k_headers;
}

const std::vector<LegacyRemoval>& legacy_removals() {
  // set_fs()/get_fs() switched the user-copy address limit to KERNEL_DS so that vfs_read/write
  // and friends accepted kernel buffers. x86 lost them in 5.18 ("x86: remove set_fs", after
  // kernel_read/kernel_write and the iov_iter work took kernel pointers); the kernel's own
  // callers deleted the save/switch/restore lines.
  static const std::vector<LegacyRemoval> k_removals = {
      {"linux<=5.17:arch/x86/include/asm/uaccess.h",
       "set_fs()/get_fs() and mm_segment_t were removed (x86, 5.18): the address-limit switch around kernel-buffer I/O "
       "is gone, as in the kernel's own callers",
       {"set_fs", "get_fs", "mm_segment_t", "KERNEL_DS", "USER_DS", "get_ds"},
       {R"(^\s*set_fs\s*\([^;]*\)\s*;\s*$)", R"(^\s*[A-Za-z_]\w*\s*=\s*get_fs\s*\(\s*\)\s*;\s*$)",
        R"(^\s*mm_segment_t\s+[A-Za-z_]\w*(\s*=\s*get_fs\s*\(\s*\))?\s*;\s*$)"}},
  };
  return k_removals;
}

} // namespace autodriver::propose
