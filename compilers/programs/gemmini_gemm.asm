# examples/regression/gemmini_gemm.hlo: C = sat8(A x B), s8[16,16] each (DIM 16, weight stationary).
# HBM: A @64, B @512, C @1024 (row-major, 16 bytes per row). HBM address 0 is avoided (Spike loads zeros).
.target gemmini
.input 0 @64 s8[16,16]
.input 1 @512 s8[16,16]
.output 0 @1024 s8[16,16]
mvin_spad(rows=16, cols=16, stride=16, scale=0x3f800000, dram=64, sp=0)      # A -> spad[0:16], scale 1.0
mvin_spad(rows=16, cols=16, stride=16, scale=0x3f800000, dram=512, sp=16)    # B -> spad[16:32]
preload_ws(rows=16, cols=16, b=16)                                           # weights B into the array
matmul_ws_acc(a_rows=16, a_cols=16, c_rows=16, c_cols=16, accumulate=0, a=0, c=0)   # acc[0:16] = A x B
mvout_acc(rows=16, cols=16, stride=16, scale=0x3f800000, relu=0, ac=0, dram=1024)   # sat8(rne(x * 1.0))
