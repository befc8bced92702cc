.target amx
.input 0 @64 bf16[2,2,1]
.input 1 @128 bf16[2,2,1]
.output 0 @192 pred[4,1]
.const @192 00000000
