/*
 * ehframe.h - reading call-frame information as it is laid out in .eh_frame and .eh_frame_hdr
 * (the LSB's exception-frame format over DWARF's CIE/FDE): DW_EH_PE-encoded values, the header of .eh_frame_hdr, CIEs, and the head of an FDE. LEB128 numbers are read
 * with base/leb128.h.
 *
 * One reader for the two users: the tracing interposers' unwinder (collector/fastunwind.c, on the
 * loaded objects in memory) and the analyzer's symbol reader (analyzer/symbols.c, on the files'
 * sections). Where the data sits is the caller's business: each function reads only the bytes it
 * is given ([p, end) or avail bytes), and the addresses that encoded values are relative to are
 * passed in (the address the data has where it is loaded: in memory for the unwinder, the
 * section's address for the symbol reader).
 *
 * Only what x86-64 Linux objects contain is understood: 32-bit lengths (a 64-bit DWARF length is
 * refused), CIE versions 1 and 3, the augmentations z, R, P, L, S, B, G and the old "eh". Pure
 * functions over caller memory: async-signal-safe, no allocation. Depends on leb128.h.
 */
#ifndef TALLY_BASE_EHFRAME_H
#define TALLY_BASE_EHFRAME_H

#include <stddef.h>
#include <stdint.h>

#include "base/leb128.h"

#define EH_PE_OMIT 0xff

/* A little-endian value of size (1 to 8) bytes at *q, sign-extended when is_signed; advances
 * *q. 0, or -1 past end. */
int eh_read_fixed(const uint8_t **q, const uint8_t *end, size_t size, int is_signed, uint64_t *v);

/* A DW_EH_PE-encoded value at *p: its format (enc & 0x0f; absptr has ptrsize bytes), then its
 * application (enc & 0x70): absolute, pcrel (plus field_addr: the address of this field where
 * the data is loaded) or datarel (plus datarel). The indirect bit (0x80) is not followed.
 * Advances *p; 0, or -1 for omit, a format or application it does not know, or the end of data
 * (then *p is unchanged). */
int eh_read_encoded(const uint8_t **p, const uint8_t *end, unsigned enc, int ptrsize,
                    uint64_t field_addr, uint64_t datarel, uint64_t *v);

/* .eh_frame_hdr's header, as every linker writes it: version 1 and a search table of datarel
 * sdata4 pairs (initial location, FDE address), both relative to the header. hdr has size bytes
 * and is loaded at hdr_addr. Sets *eh_frame (the address of .eh_frame) and *count (the table's
 * entries, all within size), returns the table's offset from hdr, or -1. */
long eh_hdr_parse(const uint8_t *hdr, size_t size, uint64_t hdr_addr, int ptrsize,
                  uint64_t *eh_frame, uint64_t *count);

/* A CIE. */
typedef struct eh_cie {
    uint64_t code_align, ra_col;
    int64_t data_align;
    uint8_t fde_enc;      /* encoding of its FDEs' addresses ('R'; absptr without) */
    int zaug;             /* 'z': FDEs have augmentation data (its length first) */
    int signal_frame;     /* 'S' */
    const uint8_t *insns; /* initial instructions, up to end */
    const uint8_t *end;
} eh_cie_t;

/* The CIE at cie (its length field), with avail bytes readable there. 0, or -1 when it is not a
 * CIE of the kind described above or does not fit. */
int eh_cie_parse(const uint8_t *cie, size_t avail, int ptrsize, eh_cie_t *ci);

/* The head of an FDE at fde (its length field), avail bytes readable there: its CIE starts
 * *cie_back bytes before fde + 4 (the caller checks that this is inside its data), *body is its
 * first byte after the CIE pointer, *end its end. 0, or -1 for a 64-bit length, a CIE (pointer
 * 0), or a length past avail. */
int eh_fde_head(const uint8_t *fde, size_t avail, uint32_t *cie_back, const uint8_t **body,
                const uint8_t **end);

/* An FDE's address range from *p (its body, loaded at body_addr: pcrel base), with its CIE's
 * encoding; then skips its augmentation data when the CIE has 'z', leaving *p at its
 * instructions. 0 or -1. */
int eh_fde_range(const uint8_t **p, const uint8_t *end, const eh_cie_t *ci, int ptrsize,
                 uint64_t body_addr, uint64_t *pc_begin, uint64_t *pc_range);

#endif
