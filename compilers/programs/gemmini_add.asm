# examples/regression/gemmini_add.hlo: C = sat8(A + B), s8[16,16] each (DIM 16).
# Both operands are widened into the accumulator (shrunk mvin), the second one accumulating (bit 30).
.target gemmini
.input 0 @64 s8[16,16]
.input 1 @512 s8[16,16]
.output 0 @1024 s8[16,16]
mvin_acc_s8(rows=16, cols=16, stride=16, accumulate=0, dram=64, ac=0)      # acc[0:16] = s32(A)
mvin_acc_s8(rows=16, cols=16, stride=16, accumulate=1, dram=512, ac=0)     # acc[0:16] += s32(B)
mvout_acc(rows=16, cols=16, stride=16, scale=0x3f800000, relu=0, ac=0, dram=1024)   # sat8
