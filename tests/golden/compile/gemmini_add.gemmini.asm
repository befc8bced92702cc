# paper/gemmini_add.hlo compiled for gemmini by accv compile
.target gemmini
.input 0 @64 s8[16,16]
.input 1 @320 s8[16,16]
.output 0 @576 s8[16,16]
mvin_acc_s8(rows=16, cols=16, stride=16, accumulate=0, dram=320, ac=0)
mvin_acc_s8(rows=16, cols=16, stride=16, accumulate=1, dram=64, ac=0)
mvout_acc(rows=16, cols=16, stride=16, scale=1065353216, relu=0, ac=0, dram=576)
