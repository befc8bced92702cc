.target amx
.input 0 @64 u8[2,2]
.input 1 @128 u8[1,1]
.output 0 @192 s32[1]
.const @192 593ca741
