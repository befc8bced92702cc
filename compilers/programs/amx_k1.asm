# oneDNN kernel K1 of the Act paper (appendix E, Fig. 42): examples/regression/amx_k1.hlo
#   dot.3[m][n] = sum_k u8 A[m][k] * s8 B[n][k]   (s32, A u8[32,64], B s8[32,64], out s32[32,32])
# HBM: A @0 (row-major), B @2048 (T(16,64): two 16 x 64-byte tiles = row-major here),
#      out @4096 (T(16,16): four contiguous 16 x 16 s32 tiles, tile (i,j) at 4096 + 1024*(2i+j)),
#      VNNI scratch @8192 (two 1 KiB tiles).
# Tiles (palette 1; the emitter's LDTILECFG): tmm0-3 C (16 rows x 64 B), tmm4-5 A (16 x 64),
#      tmm6 B in VNNI form (16 x 64), tmm7 a 16 rows x 4 bytes transposer.
# TDPBUSD needs B in VNNI layout: row kk holds B[n][4kk..4kk+3] for n = 0..15, i.e. the 16 x 16
# dword transpose of a B tile as stored. Each VNNI row is built with one strided tile load of a
# dword column (rows=16, colsb=4, stride=64) and one dense tile store (stride=4): 32 instructions
# per B tile. Total: 4 tilezero + 2 A loads + 64 re-layout + 2 VNNI loads + 4 tdpbusd + 4 stores = 80.
.target amx
.input 0 @0 u8[32,64]
.input 1 @2048 s8[32,64]{1,0:T(16,64)}
.output 0 @4096 s32[32,32]{1,0:T(16,16)}
tilezero(t=0)                                        # C00 = 0
tilezero(t=1)                                        # C01 = 0
tilezero(t=2)                                        # C10 = 0
tilezero(t=3)                                        # C11 = 0
tileloadd(rows=16, colsb=64, stride=64, t=4, addr=0)      # A rows 0..15
tileloadd(rows=16, colsb=64, stride=64, t=5, addr=1024)   # A rows 16..31
# B tile 0 (n = 0..15) -> VNNI scratch @8192
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2048)# B[0+r][0:4], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8192)# VNNI row 0
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2052)# B[0+r][4:8], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8256)# VNNI row 1
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2056)# B[0+r][8:12], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8320)# VNNI row 2
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2060)# B[0+r][12:16], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8384)# VNNI row 3
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2064)# B[0+r][16:20], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8448)# VNNI row 4
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2068)# B[0+r][20:24], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8512)# VNNI row 5
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2072)# B[0+r][24:28], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8576)# VNNI row 6
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2076)# B[0+r][28:32], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8640)# VNNI row 7
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2080)# B[0+r][32:36], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8704)# VNNI row 8
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2084)# B[0+r][36:40], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8768)# VNNI row 9
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2088)# B[0+r][40:44], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8832)# VNNI row 10
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2092)# B[0+r][44:48], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8896)# VNNI row 11
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2096)# B[0+r][48:52], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=8960)# VNNI row 12
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2100)# B[0+r][52:56], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9024)# VNNI row 13
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2104)# B[0+r][56:60], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9088)# VNNI row 14
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=2108)# B[0+r][60:64], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9152)# VNNI row 15
tileloadd(rows=16, colsb=64, stride=64, t=6, addr=8192)# B tile 0, VNNI
tdpbusd(m=16, k=16, n=16, c=0, a=4, b=6)             # C00 += A[0:16] . B0
tdpbusd(m=16, k=16, n=16, c=2, a=5, b=6)             # C10 += A[16:32] . B0
# B tile 1 (n = 16..31) -> VNNI scratch @9216
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3072)# B[16+r][0:4], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9216)# VNNI row 0
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3076)# B[16+r][4:8], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9280)# VNNI row 1
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3080)# B[16+r][8:12], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9344)# VNNI row 2
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3084)# B[16+r][12:16], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9408)# VNNI row 3
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3088)# B[16+r][16:20], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9472)# VNNI row 4
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3092)# B[16+r][20:24], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9536)# VNNI row 5
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3096)# B[16+r][24:28], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9600)# VNNI row 6
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3100)# B[16+r][28:32], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9664)# VNNI row 7
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3104)# B[16+r][32:36], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9728)# VNNI row 8
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3108)# B[16+r][36:40], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9792)# VNNI row 9
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3112)# B[16+r][40:44], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9856)# VNNI row 10
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3116)# B[16+r][44:48], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9920)# VNNI row 11
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3120)# B[16+r][48:52], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=9984)# VNNI row 12
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3124)# B[16+r][52:56], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=10048)# VNNI row 13
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3128)# B[16+r][56:60], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=10112)# VNNI row 14
tileloadd(rows=16, colsb=4, stride=64, t=7, addr=3132)# B[16+r][60:64], r < 16
tilestored(rows=16, colsb=4, stride=4, t=7, addr=10176)# VNNI row 15
tileloadd(rows=16, colsb=64, stride=64, t=6, addr=9216)# B tile 1, VNNI
tdpbusd(m=16, k=16, n=16, c=1, a=4, b=6)             # C01 += A[0:16] . B1
tdpbusd(m=16, k=16, n=16, c=3, a=5, b=6)             # C11 += A[16:32] . B1
tilestored(rows=16, colsb=64, stride=64, t=0, addr=4096)# out tile (0,0)
tilestored(rows=16, colsb=64, stride=64, t=1, addr=5120)# out tile (0,1)
tilestored(rows=16, colsb=64, stride=64, t=2, addr=6144)# out tile (1,0)
tilestored(rows=16, colsb=64, stride=64, t=3, addr=7168)# out tile (1,1)
